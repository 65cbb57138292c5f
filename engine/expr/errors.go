package expr

import (
	"errors"
	"fmt"
	"strings"

	"github.com/google/cel-go/common"
	"github.com/google/cel-go/interpreter"
)

// Error kinds: stable snake_case codes for Error.Kind. The first five are reported by
// Compile, the last two by evaluation (ErrKindCostLimit by both).
const (
	ErrKindSyntax             = "syntax"
	ErrKindTypeCheck          = "type_check"
	ErrKindUndeclaredVariable = "undeclared_variable"
	ErrKindCostLimit          = "cost_limit"
	ErrKindUnknownScope       = "unknown_scope"
	ErrKindInterrupted        = "interrupted"
	ErrKindEval               = "eval"
)

// Error is the one error type of this package, for compile and evaluation failures alike.
// Line and Column are 1-based positions within the expression source (Column counts Unicode
// code points); the caller offsets them into the file the expression came from. They are 0
// when the error has no position (evaluation errors, unknown scope).
type Error struct {
	Kind         string
	Line, Column int
	Message      string

	cause error
}

func (e *Error) Error() string {
	if e.Line == 0 {
		return e.Kind + ": " + e.Message
	}
	return fmt.Sprintf("%d:%d: %s: %s", e.Line, e.Column, e.Kind, e.Message)
}

// Unwrap returns the underlying cause of an evaluation error, if any; an interrupted
// evaluation unwraps to the context's cause (context.Canceled, context.DeadlineExceeded).
func (e *Error) Unwrap() error { return e.cause }

// AsError returns err as an *Error when it is one or wraps one.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// errorAt builds a positioned error from a cel-go location (1-based line, 0-based column).
func errorAt(kind string, loc common.Location, msg string) *Error {
	e := &Error{Kind: kind, Message: msg}
	if loc != nil && loc.Line() > 0 {
		e.Line, e.Column = loc.Line(), max(loc.Column()+1, 1)
	}
	return e
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

// startOf returns the position of the first non-blank character of src, the position
// reported for errors about the expression as a whole.
func startOf(src string) (line, col int) {
	line, col = 1, 1
	for _, r := range src {
		switch r {
		case '\n':
			line, col = line+1, 1
		case ' ', '\t', '\r':
			col++
		default:
			return line, col
		}
	}
	return 1, 1
}

// runtimeError classifies an evaluation failure.
func runtimeError(err error, limit uint64) *Error {
	var cancelled interpreter.EvalCancelledError
	switch {
	case errors.As(err, &cancelled) && cancelled.Cause == iterationLimitExceeded:
		return &Error{Kind: ErrKindCostLimit, Message: cancelled.Message, cause: err}
	case errors.As(err, &cancelled) && cancelled.Cause == interpreter.CostLimitExceeded:
		return &Error{Kind: ErrKindCostLimit, cause: err,
			Message: fmt.Sprintf("actual cost exceeded the limit %d", limit)}
	case errors.As(err, &cancelled) || errors.Is(err, interpreter.InterruptError{}):
		return &Error{Kind: ErrKindInterrupted, Message: err.Error(), cause: err}
	}
	return &Error{Kind: ErrKindEval, Message: withoutData(err.Error()), cause: err}
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
