package policy

import (
	"errors"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/topdown"

	"github.com/agentd-dev/agentd/engine/policy/internal/regovalue"
)

// TestHardening_EvalErrorsQuoteNoRequestData: an evaluation error names the rule, the
// built-in and what went wrong, but none of the input it failed on; the OPA error stays
// reachable.
func TestHardening_EvalErrorsQuoteNoRequestData(t *testing.T) {
	for src, want := range map[string]string{
		"n := to_number(input.s)":             "p.rego:3: eval_builtin_error: to_number: strconv.ParseFloat: parsing",
		"n := time.parse_rfc3339_ns(input.s)": "p.rego:3: eval_builtin_error: time.parse_rfc3339_ns: parsing time",
		`n := regex.match(input.s, "x")`:      "p.rego:3: eval_builtin_error: regex.match: error parsing regexp: missing closing )",
	} {
		b := mustCompile(t, Options{}, "p.rego", "package p\n\n"+src+"\n")
		in, _ := regovalue.Of(map[string]any{"s": "SECRET(TEXT"})
		_, _, err := mustPrepare(t, b, "data.p.n").eval(t.Context(), in)
		if !errors.Is(err, ErrEval) || strings.Contains(err.Error(), "SECRET") || !strings.HasSuffix(err.Error(), want) {
			t.Errorf("%s: error %v, want one ending %q", src, err, want)
		}
		var opa *topdown.Error
		if !errors.As(err, &opa) || !strings.Contains(opa.Error(), "SECRET") {
			t.Errorf("%s: the OPA error is not reachable: %v", src, err)
		}
	}
}
