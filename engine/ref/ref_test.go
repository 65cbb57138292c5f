package ref

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestScan_WellFormed(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Ref
	}{
		{"empty", "", nil},
		{"no braces", "plain text", nil},
		{"single brace", "{step-1.x}", nil},
		{"one ref", "{{step-1.response.data.price}}", []Ref{
			{StepID: "step-1", Path: []string{"response", "data", "price"}, Raw: "{{step-1.response.data.price}}", Offset: 0},
		}},
		{"embedded", "buy {{step-1.response.data.price}} USD", []Ref{
			{StepID: "step-1", Path: []string{"response", "data", "price"}, Raw: "{{step-1.response.data.price}}", Offset: 4},
		}},
		{"single segment path", "{{step-2.response}}", []Ref{
			{StepID: "step-2", Path: []string{"response"}, Raw: "{{step-2.response}}"},
		}},
		{"two refs", "{{step-1.a}}-{{step-22.b_c.D-e}}", []Ref{
			{StepID: "step-1", Path: []string{"a"}, Raw: "{{step-1.a}}"},
			{StepID: "step-22", Path: []string{"b_c", "D-e"}, Raw: "{{step-22.b_c.D-e}}", Offset: 13},
		}},
		{"word id", "{{step-fetch_quote-2.x}}", []Ref{
			{StepID: "step-fetch_quote-2", Path: []string{"x"}, Raw: "{{step-fetch_quote-2.x}}"},
		}},
		{"bare prefix id", "{{step-.x}}", []Ref{
			{StepID: "step-", Path: []string{"x"}, Raw: "{{step-.x}}"},
		}},
		{"non-step tokens ignored", "{{user.name}} {{ .Values }} {{#if x}}{{/if}}", nil},
		{"case sensitive prefix", "{{Step-1.x}} {{STEP-1.x}}", nil},
		{"unclosed non-step ignored", "{{user.name", nil},
		{"lone closing braces", "}} {step-1}", nil},
		{"triple braces", "{{{step-1.x}}}", []Ref{
			{StepID: "step-1", Path: []string{"x"}, Raw: "{{step-1.x}}", Offset: 1},
		}},
		{"ref nested in non-step token", "{{#each {{step-1.items}}}}", []Ref{
			{StepID: "step-1", Path: []string{"items"}, Raw: "{{step-1.items}}", Offset: 8},
		}},
		{"ref after non-step opener", "{{ x {{step-3.y}}", []Ref{
			{StepID: "step-3", Path: []string{"y"}, Raw: "{{step-3.y}}", Offset: 5},
		}},
		{"unicode around", "préfix {{step-1.x}} ✓", []Ref{
			{StepID: "step-1", Path: []string{"x"}, Raw: "{{step-1.x}}", Offset: 8},
		}},
		{"extra closing brace", "{{step-1.x}}}", []Ref{
			{StepID: "step-1", Path: []string{"x"}, Raw: "{{step-1.x}}"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Scan(tt.in)
			if err != nil {
				t.Fatalf("Scan(%q) error = %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Scan(%q) =\n %#v\nwant\n %#v", tt.in, got, tt.want)
			}
		})
	}
}

func TestScan_Malformed(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		token  string
		offset int
		reason string
	}{
		{"id only", "{{step-1}}", "{{step-1}}", 0, ReasonMissingPath},
		{"trailing dot", "x {{step-1.}}", "{{step-1.}}", 2, ReasonEmptySegment},
		{"double dot", "{{step-1..x}}", "{{step-1..x}}", 0, ReasonEmptySegment},
		{"trailing dot after segment", "{{step-1.x.}}", "{{step-1.x.}}", 0, ReasonEmptySegment},
		{"unclosed", "{{step-1.x", "{{step-1.x", 0, ReasonUnclosed},
		{"unclosed id", "{{step-1", "{{step-1", 0, ReasonUnclosed},
		{"unclosed after dot", "{{step-1.", "{{step-1.", 0, ReasonUnclosed},
		{"prefix only unclosed", "{{step-", "{{step-", 0, ReasonUnclosed},
		{"single closing brace", "{{step-1.x}", "{{step-1.x}", 0, ReasonUnclosed},
		{"leading space", "{{ step-1.x}}", "{{ step-1.x}}", 0, ReasonWhitespace},
		{"padded", "{{ step-1.x }}", "{{ step-1.x }}", 0, ReasonWhitespace},
		{"trailing space", "{{step-1.x }}", "{{step-1.x }}", 0, ReasonWhitespace},
		{"space in id", "{{step-1 .x}}", "{{step-1 .x}}", 0, ReasonWhitespace},
		{"newline", "{{\nstep-1.x}}", "{{\nstep-1.x}}", 0, ReasonWhitespace},
		{"index syntax", "{{step-1.items[0]}}", "{{step-1.items[0]}}", 0, ReasonInvalidChar + " '[' at offset 14"},
		{"non-ascii id", "{{step-é.x}}", "{{step-é.x}}", 0, ReasonInvalidChar + " 'é' at offset 7"},
		{"brace in path", "{{step-1.x}y}}", "{{step-1.x}y}}", 0, ReasonInvalidChar + " '}' at offset 10"},
		{"nested opener", "{{step-{{step-1.x}}.y}}", "{{step-{{step-1.x}}", 0, ReasonInvalidChar + " '{' at offset 7"},
		{"second token bad", "{{step-1.x}} and {{step-2}}", "{{step-2}}", 17, ReasonMissingPath},
		{"after ignored token", "{{user}} {{step-2.}}", "{{step-2.}}", 9, ReasonEmptySegment},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			refs, err := Scan(tt.in)
			if refs != nil {
				t.Errorf("Scan(%q) refs = %v, want nil on error", tt.in, refs)
			}
			var me *MalformedError
			if !errors.As(err, &me) {
				t.Fatalf("Scan(%q) error = %v, want *MalformedError", tt.in, err)
			}
			if me.Token != tt.token || me.Offset != tt.offset || me.Reason != tt.reason {
				t.Fatalf("Scan(%q) = {Token:%q Offset:%d Reason:%q}, want {%q %d %q}",
					tt.in, me.Token, me.Offset, me.Reason, tt.token, tt.offset, tt.reason)
			}
		})
	}
}

func TestMalformedError_TokenIsBounded(t *testing.T) {
	in := "{{step-1." + strings.Repeat("é", 200)
	_, err := Scan(in)
	var me *MalformedError
	if !errors.As(err, &me) {
		t.Fatalf("error = %v, want *MalformedError", err)
	}
	if len(me.Token) > maxTokenLen || !strings.HasPrefix(in, me.Token) {
		t.Fatalf("Token %q (len %d) not a bounded prefix of the input", me.Token, len(me.Token))
	}
	if !strings.HasSuffix(me.Token, "é") {
		t.Fatalf("Token %q cut inside a rune", me.Token)
	}
}

func TestMalformedError_Error(t *testing.T) {
	_, err := Scan(`a {{step-1}}`)
	want := `malformed step reference "{{step-1}}" at offset 2: missing path after step id`
	if err == nil || err.Error() != want {
		t.Fatalf("Error() = %v, want %q", err, want)
	}
}

func TestScan_NoAllocationsWithoutBraces(t *testing.T) {
	inputs := []string{"", "AAPL", "a plain sentence with {single} braces }}", "{{user.name}} {{#if}}"}
	for _, in := range inputs {
		allocs := testing.AllocsPerRun(100, func() {
			if refs, err := Scan(in); refs != nil || err != nil {
				t.Fatalf("Scan(%q) = %v, %v", in, refs, err)
			}
		})
		if allocs != 0 {
			t.Errorf("Scan(%q) allocates %v times, want 0", in, allocs)
		}
	}
}

func BenchmarkScan_NoTokens(b *testing.B) {
	s := "Get the latest quote for AAPL and report the price in USD, please."
	b.ReportAllocs()
	for b.Loop() {
		_, _ = Scan(s)
	}
}

func BenchmarkScan_OneRef(b *testing.B) {
	s := "Buy 10 shares if {{step-1.response.data.price}} is below the limit."
	b.ReportAllocs()
	for b.Loop() {
		_, _ = Scan(s)
	}
}
