package prof

import "testing"

func TestParseTraceAndCategorize(t *testing.T) {
	block := `
     bytes:  512B
      2049   encoding/json.(*Decoder).refill
             encoding/json.(*Decoder).Decode
             github.com/agentd-dev/agentd/cmd/agentd/internal/server.decodeBody
             net/http.(*conn).serve
`
	v, frames, ok := parseTrace(block)
	if !ok || v != 2049 || len(frames) != 4 || frames[0] != "encoding/json.(*Decoder).refill" {
		t.Fatalf("parseTrace = %v, %q, %v", v, frames, ok)
	}
	if got := Categories[categorize(frames)].Name; got != "request JSON decode" {
		t.Errorf("category = %q", got)
	}
	deep := []string{"runtime.mallocgc", "github.com/open-policy-agent/opa/v1/topdown.(*eval).evalStep"}
	if got := Categories[categorize(deep)].Name; got != "policy evaluation (OPA topdown)" {
		t.Errorf("category = %q", got)
	}
	if got := categorize([]string{"runtime.schedule"}); got != len(Categories) {
		t.Errorf("runtime.schedule in category %d, want other", got)
	}
}

func TestParseValue(t *testing.T) {
	for in, want := range map[string]float64{"20ms": 20e6, "1.5s": 1.5e9, "300us": 300e3, "2049": 2049, "2kB": 2048} {
		if got, err := parseValue(in); err != nil || got != want {
			t.Errorf("parseValue(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
}
