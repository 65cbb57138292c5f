package expr_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/engine/expr"
)

// TestHardening_EvalErrorsQuoteNoRequestData: the message of a runtime error carries
// none of the data it failed on (it is logged by fail-open hooks and recorded); the
// cause keeps cel-go's whole message.
func TestHardening_EvalErrorsQuoteNoRequestData(t *testing.T) {
	c, err := expr.NewCompiler(expr.Options{})
	if err != nil {
		t.Fatal(err)
	}
	vars := &expr.Vars{Request: "SECRET-TEXT", Metadata: map[string]any{"list": []any{1}, "ts": "SECRET-TS"}}
	for src, want := range map[string]string{
		"metadata[request] == 'x'":          "eval: no such key",
		"timestamp(request) > now":          "eval: invalid RFC 3339 timestamp",
		"timestamp(metadata.ts) > now":      "eval: invalid RFC 3339 timestamp",
		"int(request) > 0":                  "eval: type conversion error from 'string' to 'int'",
		"metadata.list[size(request)] == 1": "eval: index out of bounds",
	} {
		p, err := c.Compile(expr.BeforePlanning, src, expr.Bool)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		_, err = p.EvalBool(context.Background(), vars)
		if err == nil || err.Error() != want {
			t.Errorf("%s: error %v, want %q", src, err, want)
			continue
		}
		if cause := errors.Unwrap(err); cause == nil || !strings.HasPrefix(cause.Error(), strings.TrimPrefix(want, "eval: ")) {
			t.Errorf("%s: cause %v does not keep cel-go's message", src, cause)
		}
	}
	p, err := c.Compile(expr.BeforePlanning, "{size(request): 1}", expr.Any)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Eval(context.Background(), vars); err == nil || strings.Contains(err.Error(), "11") {
		t.Errorf("a map with a non-string key: error %v quotes the key", err)
	}
}
