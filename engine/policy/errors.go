package policy

import (
	"errors"
	"strconv"
	"strings"

	"github.com/agentd-dev/agentd/engine"
)

// Error kinds reported by Compile and Prepare. They are stable: match on Kind, never on
// the message.
const (
	KindRegoParse         = "rego_parse"          // a module is not valid Rego v1
	KindRegoCompile       = "rego_compile"        // the modules do not compile together
	KindRegoUnsafeBuiltin = "rego_unsafe_builtin" // a call to a disabled (network) built-in
	KindDataConflict      = "data_conflict"       // two data files, or data and a rule, claim one path
	KindDataInvalid       = "data_invalid"        // a data value is not JSON-shaped, or a root value is not an object
	KindInvalidQuery      = "invalid_query"       // a query that is not a ground data reference
	KindUndefinedQuery    = "undefined_query"     // a query naming no package, rule or data
)

// Error is one diagnostic from Compile or Prepare. Line and Column are 1-based and zero
// when unknown (data files carry no positions); File is empty for a query.
type Error struct {
	Kind    string
	File    string
	Line    int
	Column  int
	Message string
}

// Error renders "file:line:col: kind: message", leaving out the parts that are unknown.
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(e.Line))
			if e.Column > 0 {
				b.WriteByte(':')
				b.WriteString(strconv.Itoa(e.Column))
			}
		}
		b.WriteString(": ")
	}
	b.WriteString(e.Kind)
	b.WriteString(": ")
	b.WriteString(e.Message)
	return b.String()
}

// Errors is every diagnostic Compile found, sorted by file, line, column, kind and
// message, without duplicates. Compile returns it only when it is non-empty.
type Errors []*Error

// Error renders one diagnostic per line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap exposes the entries to errors.Is and errors.As.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// AsErrors returns the diagnostics in err: every entry of an Errors, or a lone *Error.
func AsErrors(err error) (Errors, bool) {
	var es Errors
	if errors.As(err, &es) {
		return es, true
	}
	var e *Error
	if errors.As(err, &e) && e != nil {
		return Errors{e}, true
	}
	return nil, false
}

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
