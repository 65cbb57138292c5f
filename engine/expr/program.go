package expr

import (
	"context"
	"fmt"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// Program is a compiled expression. It is immutable and safe for concurrent use; each
// evaluation needs its own Vars.
type Program struct {
	want  Kind
	limit uint64
	// prg evaluates without tracking the cost; tracked, nil when the cost does not
	// depend on input sizes, with the runtime cost limit (see fits).
	prg, tracked cel.Program
	reads        map[string]*reads
	sizes        []sizeCheck // what fits checks, from reads
}

// Reads reports whether the expression may read variable at all (any member of it).
func (p *Program) Reads(variable string) bool { return p.reads[variable] != nil }

// MayRead reports whether the expression may read member of variable: it selects that
// member by name, or uses the variable other than by selecting members.
func (p *Program) MayRead(variable, member string) bool {
	r := p.reads[variable]
	return r != nil && (r.whole || r.members[member])
}

// Eval evaluates the program against vars and returns the result as a Go value: bool,
// string, int64, uint64, float64, []byte, []any, map[string]any, time.Time, time.Duration
// or nil, sharing no memory with vars. Evaluation stops with an *EvalError of kind
// cost_limit when the actual cost exceeds the limit or comprehensions exceed the iteration
// limit, and of kind interrupted when ctx is done (checked every 100 comprehension
// iterations; expressions without comprehensions always finish). Any other failure, and a
// result that is not of the program's output kind, is an *EvalError of kind eval. The caller decides
// whether an error fails open or closed. A nil vars evaluates with empty values.
func (p *Program) Eval(ctx context.Context, vars *Vars) (any, error) {
	out, err := p.run(ctx, vars)
	if err != nil {
		return nil, err
	}
	switch p.want {
	case Bool:
		if _, ok := out.(types.Bool); !ok {
			return nil, wrongResult(out, Bool)
		}
	case String:
		if _, ok := out.(types.String); !ok {
			return nil, wrongResult(out, String)
		}
	}
	v, err := native(out, 0)
	if err != nil {
		return nil, &EvalError{Kind: EvalFailed, Message: err.Error()}
	}
	return v, nil
}

// EvalBool is Eval for a result that must be a bool; it converts nothing.
func (p *Program) EvalBool(ctx context.Context, vars *Vars) (bool, error) {
	out, err := p.run(ctx, vars)
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, wrongResult(out, Bool)
	}
	return bool(b), nil
}

// EvalString is Eval for a result that must be a string; it converts nothing.
func (p *Program) EvalString(ctx context.Context, vars *Vars) (string, error) {
	out, err := p.run(ctx, vars)
	if err != nil {
		return "", err
	}
	s, ok := out.(types.String)
	if !ok {
		return "", wrongResult(out, String)
	}
	return string(s), nil
}

// run evaluates within the cost limit (tracked at run time unless fits vouches for the
// estimate) and, when ctx can be cancelled, interruptibly.
func (p *Program) run(ctx context.Context, vars *Vars) (ref.Val, error) {
	if vars == nil {
		vars = &Vars{}
	}
	vars.iterations = 0
	var (
		out ref.Val
		err error
	)
	prg := p.prg
	if p.tracked != nil && !p.fits(vars) {
		prg = p.tracked
	}
	if ctx == nil || ctx.Done() == nil {
		out, _, err = prg.Eval(vars)
	} else {
		out, _, err = prg.ContextEval(ctx, vars)
	}
	if err != nil {
		return nil, runtimeError(err, p.limit)
	}
	return out, nil
}

func wrongResult(out ref.Val, want Kind) *EvalError {
	return &EvalError{Kind: EvalFailed,
		Message: fmt.Sprintf("expression returned %s, want %s", out.Type().TypeName(), want)}
}
