package engine_test

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/engine"
)

func TestAfterSynthesis_ChainsAndErrorKeepsPrevious(t *testing.T) {
	suffix := func(name, s string) *synthesisHook {
		return &synthesisHook{name: name, fn: func(_ context.Context, _ *engine.PipelineContext, r string) (string, error) {
			return r + s, nil
		}}
	}
	failing := &synthesisHook{name: "failing", fn: func(_ context.Context, _ *engine.PipelineContext, r string) (string, error) {
		return "DISCARDED " + r, errors.New("redactor crashed")
	}}
	a, c := suffix("a", "+a"), suffix("c", "+c")
	p := mustNew(t, []engine.Hook{a, &executionHook{name: "other-stage"}, failing, c})
	trail := engine.NewTrail()
	got := p.AfterSynthesis(context.Background(), newPctx(), "draft", trail)
	if got != "draft+a+c" {
		t.Fatalf("response = %q, want draft+a+c", got)
	}
	if want := []string{"draft+a"}; !reflect.DeepEqual(failing.seen, want) || !reflect.DeepEqual(c.seen, want) {
		t.Fatalf("inputs: failing %v, c %v; want both to get a's output", failing.seen, c.seen)
	}
	invs := trail.Invocations()
	completed := decision(engine.FailOpen, engine.ActionContinue, engine.ReasonCompleted)
	checkInvocation(t, invs[0], "a", engine.StageAfterSynthesis, 1, engine.InvocationSucceeded, completed, "")
	checkInvocation(t, invs[1], "failing", engine.StageAfterSynthesis, 2, engine.InvocationFailed,
		decision(engine.FailOpen, engine.ActionContinue, engine.ReasonHookError), "redactor crashed")
	checkInvocation(t, invs[2], "c", engine.StageAfterSynthesis, 3, engine.InvocationSucceeded, completed, "")
}

func TestAfterSynthesis_StreamingCaveatDocumented(t *testing.T) {
	for file, name := range map[string]string{"after_synthesis.go": "AfterSynthesis", "hooks.go": "AfterSynthesisHook"} {
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		doc := declDoc(f, name)
		if !strings.Contains(doc, "stream") || !strings.Contains(doc, "withdraw") {
			t.Errorf("%s: the doc comment of %s does not say that streamed text cannot be withdrawn:\n%s", file, name, doc)
		}
	}
}

// declDoc returns the doc comment of the function or type called name in f.
func declDoc(f *ast.File, name string) string {
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Name.Name == name {
				return d.Doc.Text()
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				if ts, ok := spec.(*ast.TypeSpec); ok && ts.Name.Name == name {
					return d.Doc.Text() + ts.Doc.Text()
				}
			}
		}
	}
	return ""
}
