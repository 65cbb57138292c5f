package builtin_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
)

// synthesisHook is a hooks section with one after_synthesis hook named rewrite.
func synthesisHook(steps string) string {
	return hooks(`hooks:
  - name: rewrite
    stage: after_synthesis
    steps:
` + steps + "\n")
}

// rewrite loads one after_synthesis hook and runs it on response; the hook must
// succeed.
func rewrite(t *testing.T, steps, response string) string {
	t.Helper()
	gen := loadHooks(t, synthesisHook(steps))
	got, invs := runSynthesis(t, gen, requestCtx(gen, "req-1", noGate), "q", nil, response)
	wantInvocations(t, invs, 1)
	wantInvocation(t, invs[0], "rewrite", engine.InvocationSucceeded, engine.ReasonCompleted, "")
	return got
}

func TestRedact_NamedPatterns(t *testing.T) {
	tests := []struct {
		pattern, in, want string
	}{
		{"email", "Write to ann.lee+desk@example.co.uk or bob@test.io.", "Write to [REDACTED] or [REDACTED]."},
		{"email", "no address at all @ here", "no address at all @ here"},
		{"phone", "Call +1 (415) 555-0100 today.", "Call [REDACTED] today."},
		{"phone", "Call 030 1234 5678 or 415.555.0100.", "Call [REDACTED] or [REDACTED]."},
		{"credit_card", "Card 4111 1111 1111 1111 was charged.", "Card [REDACTED] was charged."},
		{"credit_card", "Card 5500-0000-0000-0004, amex 378282246310005.", "Card [REDACTED], amex [REDACTED]."},
		{"credit_card", "Order 12345 shipped.", "Order 12345 shipped."},
		{"ssn", "SSN 123-45-6789.", "SSN [REDACTED]."},
		{"ssn", "Part 1234-56-7890 is not one.", "Part 1234-56-7890 is not one."},
		{"ipv4", "From 192.168.0.1:8080 and 10.0.0.254.", "From [REDACTED]:8080 and [REDACTED]."},
		{"ipv4", "Version 1.2.3 is out.", "Version 1.2.3 is out."},
	}
	for _, tt := range tests {
		t.Run(tt.pattern+"/"+tt.in, func(t *testing.T) {
			got := rewrite(t, `      - redact: {patterns: [`+tt.pattern+`]}`, tt.in)
			if got != tt.want {
				t.Errorf("redact %s(%q) = %q, want %q", tt.pattern, tt.in, got, tt.want)
			}
		})
	}
}

func TestRedact_CustomRegexAndReplacement(t *testing.T) {
	tests := []struct {
		name, params, in, want string
	}{
		{
			name:   "custom regex",
			params: `{regex: ['ACME-\d+', '(?i)secret']}`,
			in:     "Ticket ACME-42 is SECRET.",
			want:   "Ticket [REDACTED] is [REDACTED].",
		},
		{
			name:   "custom replacement is literal",
			params: `{regex: ['(\w+)@(\w+)'], replacement: '<$1>'}`,
			in:     "user@host",
			want:   "<$1>",
		},
		{
			name:   "patterns then regexes, in order",
			params: `{patterns: [email], regex: ['\[REDACTED\]'], replacement: '[REDACTED]!'}`,
			in:     "a@b.io",
			want:   "[REDACTED]!!",
		},
		{
			name:   "no match leaves the response",
			params: `{patterns: [ssn, ipv4], regex: [zzz]}`,
			in:     "Nothing to hide.",
			want:   "Nothing to hide.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := rewrite(t, `      - redact: `+tt.params, tt.in); got != tt.want {
				t.Errorf("redact(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// A regex that is not RE2 is a load error at the param.
func TestRedact_InvalidRegexIsALoadError(t *testing.T) {
	_, err := config.Load(writeConfig(t, map[string]string{"hooks/test.yaml": synthesisHook(`      - redact: {regex: ['(a']}`)}), config.Options{})
	list := wantLoadErrors(t, err, "invalid_params")
	if e := list[0]; e.Line != 8 || !strings.Contains(e.Message, `invalid regex "(a"`) {
		t.Errorf("error = %v, want one at line 8 naming the regex", e)
	}
}

func TestTruncate_Cuts(t *testing.T) {
	tests := []struct {
		name, params, in, want string
	}{
		{"shorter is unchanged", `{max_bytes: 10}`, "short", "short"},
		{"exactly max is unchanged", `{max_bytes: 5}`, "exact", "exact"},
		{"ascii with the default suffix", `{max_bytes: 8}`, "abcdefghij", "abcde…"},
		{"custom suffix", `{max_bytes: 10, suffix: ' [cut]'}`, "0123456789abc", "0123 [cut]"},
		{"empty suffix", `{max_bytes: 3, suffix: ''}`, "abcdef", "abc"},
		{"two-byte rune at the cut", `{max_bytes: 6}`, "ééééé", "é…"},
		{"four-byte rune at the cut", `{max_bytes: 7, suffix: ''}`, "😀😀😀", "😀"},
		{"cut on a boundary keeps the rune", `{max_bytes: 4, suffix: ''}`, "éééé", "éé"},
		{"nothing but the suffix fits", `{max_bytes: 5}`, "😀😀", "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := rewrite(t, `      - truncate: `+tt.params, tt.in); got != tt.want {
				t.Errorf("truncate(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// For every limit, the result is valid UTF-8, at most max_bytes long, and a prefix of
// the response on a rune boundary plus the suffix.
func TestTruncate_UTF8Boundary(t *testing.T) {
	const in = "aé€😀bé€😀c"
	for max := 4; max <= len(in)+1; max++ {
		got := rewrite(t, fmt.Sprintf(`      - truncate: {max_bytes: %d}`, max), in)
		if !utf8.ValidString(got) || len(got) > max {
			t.Errorf("max_bytes %d: %q is invalid UTF-8 or too long", max, got)
		}
		if len(in) <= max {
			if got != in {
				t.Errorf("max_bytes %d: %q, want unchanged", max, got)
			}
			continue
		}
		prefix, ok := strings.CutSuffix(got, "…")
		if !ok || !strings.HasPrefix(in, prefix) || len(prefix) < max-len("…")-3 {
			t.Errorf("max_bytes %d: %q is not the longest rune-aligned prefix plus the suffix", max, got)
		}
	}
}

// A suffix that does not fit is a load error.
func TestTruncate_SuffixMustFit(t *testing.T) {
	_, err := config.Load(writeConfig(t, map[string]string{"hooks/test.yaml": synthesisHook(`      - truncate: {max_bytes: 3}`)}), config.Options{})
	list := wantLoadErrors(t, err, "invalid_params")
	if !strings.Contains(list[0].Message, "suffix (3 bytes) must be shorter than max_bytes (3)") {
		t.Errorf("error = %v", list[0])
	}
}
