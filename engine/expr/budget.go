package expr

import (
	"strconv"

	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"
)

// DefaultMaxIterations is the iteration limit used when Options.MaxIterations is 0.
const DefaultMaxIterations = 5 * MaxCollectionSize

// rangeIDs returns the ids of the expressions that comprehensions in e range over.
func rangeIDs(e ast.Expr) map[int64]bool {
	ids := make(map[int64]bool)
	ast.PostOrderVisit(e, ast.NewExprVisitor(func(e ast.Expr) {
		if e.Kind() == ast.ComprehensionKind {
			ids[e.AsComprehension().IterRange().ID()] = true
		}
	}))
	return ids
}

// iterationLimitExceeded is the cancellation cause of an evaluation stopped by the
// iteration limit, beside cel-go's own causes.
const iterationLimitExceeded interpreter.CancellationCause = 100

// iterationLimit charges the size of every comprehension range against a limit on the
// iterations of one evaluation (see Options.MaxIterations).
type iterationLimit struct {
	max     int64
	message string
}

func newIterationLimit(n int) *iterationLimit {
	msg := "comprehensions exceeded " + strconv.Itoa(n) + " iterations"
	return &iterationLimit{max: int64(n), message: msg}
}

// decorator wraps the range expressions of comprehensions (ids) so that every value they
// produce is charged. The wrappers keep the interface of the node they wrap, since the cost
// tracker accounts by node type.
func (l *iterationLimit) decorator(ids map[int64]bool) interpreter.InterpretableDecoratorV2 {
	return func(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
		if !ids[i.ID()] {
			return i, nil
		}
		switch t := i.(type) {
		case interpreter.InterpretableAttribute:
			return &attrRange{t, l}, nil
		case interpreter.InterpretableCall:
			return &callRange{t, l}, nil
		case interpreter.InterpretableConstructor:
			return &constructorRange{t, l}, nil
		}
		return &anyRange{i, l}, nil
	}
}

type attrRange struct {
	interpreter.InterpretableAttribute
	limit *iterationLimit
}

func (r *attrRange) Exec(f *interpreter.ExecutionFrame) ref.Val {
	return r.limit.charge(f, r.InterpretableAttribute.Exec(f))
}
func (r *attrRange) Eval(a interpreter.Activation) ref.Val { return r.Exec(interpreter.AsFrame(a)) }

type callRange struct {
	interpreter.InterpretableCall
	limit *iterationLimit
}

func (r *callRange) Exec(f *interpreter.ExecutionFrame) ref.Val {
	return r.limit.charge(f, r.InterpretableCall.Exec(f))
}
func (r *callRange) Eval(a interpreter.Activation) ref.Val { return r.Exec(interpreter.AsFrame(a)) }

type constructorRange struct {
	interpreter.InterpretableConstructor
	limit *iterationLimit
}

func (r *constructorRange) Exec(f *interpreter.ExecutionFrame) ref.Val {
	return r.limit.charge(f, r.InterpretableConstructor.Exec(f))
}
func (r *constructorRange) Eval(a interpreter.Activation) ref.Val {
	return r.Exec(interpreter.AsFrame(a))
}

type anyRange struct {
	interpreter.InterpretableV2
	limit *iterationLimit
}

func (r *anyRange) Exec(f *interpreter.ExecutionFrame) ref.Val {
	return r.limit.charge(f, r.InterpretableV2.Exec(f))
}
func (r *anyRange) Eval(a interpreter.Activation) ref.Val { return r.Exec(interpreter.AsFrame(a)) }

// charge adds the size of a comprehension range to the evaluation's iteration count and
// aborts the evaluation, as cel-go's cost tracker does, once the count exceeds the limit.
func (l *iterationLimit) charge(f *interpreter.ExecutionFrame, v ref.Val) ref.Val {
	sizer, ok := v.(traits.Sizer)
	if !ok {
		return v
	}
	n, ok := sizer.Size().(types.Int)
	vars := varsOf(f)
	if !ok || vars == nil {
		return v
	}
	vars.iterations += int64(n)
	if vars.iterations > l.max {
		panic(interpreter.EvalCancelledError{Cause: iterationLimitExceeded, Message: l.message})
	}
	return v
}

// varsOf finds the Vars at the root of the frame's activations.
func varsOf(f *interpreter.ExecutionFrame) *Vars {
	for a := f.Unwrap(); a != nil; a = a.Parent() {
		if v, ok := a.(*Vars); ok {
			return v
		}
	}
	return nil
}
