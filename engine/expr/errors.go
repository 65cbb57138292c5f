package expr

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/cel-go/common"
	"github.com/google/cel-go/interpreter"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/diag"
)

// EvalKind classifies why an evaluation produced no value. The values are stable
// snake_case codes.
type EvalKind string

// Evaluation error kinds.
const (
	EvalCostLimit   EvalKind = "cost_limit"  // the actual cost or the comprehension iterations exceeded their limit
	EvalInterrupted EvalKind = "interrupted" // the context ended the evaluation
	EvalFailed      EvalKind = "eval"        // any other failure, a result of the wrong type included
)

// EvalError reports why a Program's evaluation produced no value.
type EvalError struct {
	Kind    EvalKind
	Message string

	cause error
}

func (e *EvalError) Error() string { return string(e.Kind) + ": " + e.Message }

// DecisionCause is CauseTimeout when the context's deadline ended the evaluation and
// CauseEvaluationError otherwise: the expression could not decide (see engine.Cause).
func (e *EvalError) DecisionCause() engine.Cause {
	if errors.Is(e.cause, context.DeadlineExceeded) {
		return engine.CauseTimeout
	}
	return engine.CauseEvaluationError
}

// Unwrap returns the underlying cause, if any; an interrupted evaluation unwraps to the
// context's cause (context.Canceled, context.DeadlineExceeded).
func (e *EvalError) Unwrap() error { return e.cause }

// errorAt builds a compile diagnostic at a cel-go location (1-based line, 0-based column
// in characters) in src, converting the column to the 1-based byte column diag uses.
func errorAt(src string, kind diag.Kind, loc common.Location, msg string) *diag.Error {
	e := &diag.Error{Kind: kind, Message: msg}
	if loc != nil && loc.Line() > 0 {
		e.Line, e.Column = loc.Line(), byteColumn(src, loc.Line(), max(loc.Column()+1, 1))
	}
	return e
}

// byteColumn converts a 1-based character column on line (1-based) of src to bytes.
func byteColumn(src string, line, col int) int {
	lines := strings.Split(src, "\n")
	if line > len(lines) {
		return col
	}
	return diag.ByteColumn([]byte(lines[line-1]), col)
}

// firstIssue returns the cel-go error that comes first in the source.
func firstIssue(errs []*common.Error) *common.Error {
	first := errs[0]
	for _, e := range errs[1:] {
		if before(e.Location, first.Location) {
			first = e
		}
	}
	return first
}

func before(a, b common.Location) bool {
	if a.Line() != b.Line() {
		return a.Line() < b.Line()
	}
	return a.Column() < b.Column()
}

// wholeError is a diagnostic about the expression as a whole, reported at the first
// non-blank character of src.
func wholeError(src string, kind diag.Kind, msg string) *diag.Error {
	e := &diag.Error{Kind: kind, Line: 1, Column: 1, Message: msg}
	for _, r := range src {
		switch r {
		case '\n':
			e.Line, e.Column = e.Line+1, 1
		case ' ', '\t', '\r':
			e.Column++
		default:
			return e
		}
	}
	return &diag.Error{Kind: kind, Line: 1, Column: 1, Message: msg}
}

// runtimeError classifies an evaluation failure.
func runtimeError(err error, limit uint64) *EvalError {
	var cancelled interpreter.EvalCancelledError
	switch {
	case errors.As(err, &cancelled) && cancelled.Cause == iterationLimitExceeded:
		return &EvalError{Kind: EvalCostLimit, Message: cancelled.Message, cause: err}
	case errors.As(err, &cancelled) && cancelled.Cause == interpreter.CostLimitExceeded:
		return &EvalError{Kind: EvalCostLimit, cause: err,
			Message: fmt.Sprintf("actual cost exceeded the limit %d", limit)}
	case errors.As(err, &cancelled) || errors.Is(err, interpreter.InterruptError{}):
		return &EvalError{Kind: EvalInterrupted, Message: err.Error(), cause: err}
	}
	return &EvalError{Kind: EvalFailed, Message: withoutData(err.Error()), cause: err}
}

// withoutData returns cel-go's message of a runtime error without the data it may
// quote (a missing key, an unparsable timestamp or pattern, an index), so an error
// that is logged or recorded carries no request text: the message up to its first
// quote, backquote or ": ". The whole message stays in the error's cause.
func withoutData(msg string) string {
	if i := strings.IndexAny(msg, "\"`"); i >= 0 {
		msg = msg[:i]
	}
	if i := strings.Index(msg, ": "); i >= 0 {
		msg = msg[:i]
	}
	return strings.TrimSpace(msg)
}
