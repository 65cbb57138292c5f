package policy

import (
	"errors"
	"strings"

	"github.com/agentd-dev/agentd/engine"
)

// Reasons an evaluation produced no usable decision. Every *EvalError wraps exactly one
// of them; all of them fail closed.
var (
	ErrTimeout   = errors.New("evaluation timed out")
	ErrCanceled  = errors.New("evaluation canceled")
	ErrEval      = errors.New("evaluation failed")
	ErrUndefined = errors.New("decision is undefined")
	ErrShape     = errors.New("decision has the wrong shape")
)

// EvalError reports why a query produced no usable decision. Reason is one of ErrTimeout,
// ErrCanceled, ErrEval, ErrUndefined and ErrShape; Cause is the underlying error (the
// OPA error, the context error or a description of the bad shape) and may be nil.
type EvalError struct {
	Query  string
	Reason error
	Cause  error
}

func (e *EvalError) Error() string {
	msg := "policy: " + e.Query + ": " + e.Reason.Error()
	if e.Cause != nil {
		msg += ": " + e.Cause.Error()
	}
	return msg
}

// DecisionCause is CauseTimeout for a timeout and CauseEvaluationError otherwise: the
// policy could not decide (see engine.Cause).
func (e *EvalError) DecisionCause() engine.Cause {
	if e.Reason == ErrTimeout {
		return engine.CauseTimeout
	}
	return engine.CauseEvaluationError
}

// dataFreeError is an OPA evaluation error told without the data it may quote (a
// built-in's argument: a string that is not a number, a time or a pattern): its text
// up to the first quote or backquote. Errors of evaluation are logged by fail-open
// hooks and recorded; they must carry no request text. It unwraps to the OPA error.
type dataFreeError struct {
	err  error
	text string
}

func withoutData(err error) error {
	text := err.Error()
	if i := strings.IndexAny(text, "\"`"); i >= 0 {
		text = strings.TrimRight(text[:i], " :")
	}
	return &dataFreeError{err: err, text: text}
}

func (e *dataFreeError) Error() string { return e.text }
func (e *dataFreeError) Unwrap() error { return e.err }

// Unwrap returns Reason and, when set, Cause, so errors.Is matches either.
func (e *EvalError) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Reason}
	}
	return []error{e.Reason, e.Cause}
}
