package op

import (
	"errors"
	"fmt"
	"strconv"
)

// ErrorKind names why Compile rejected a Set. Kinds are stable: match on Kind, never on
// the message.
type ErrorKind string

// Compile error kinds.
const (
	KindMissingRevision       ErrorKind = "missing_revision"        // guards without a policy revision
	KindInvalidRevision       ErrorKind = "invalid_revision"        // revision too long, not UTF-8, blank or with control characters
	KindRevisionWithoutGuards ErrorKind = "revision_without_guards" // a revision but nothing it governs
	KindMissingName           ErrorKind = "missing_name"            // an around or guard without a name
	KindNilCallback           ErrorKind = "nil_callback"            // Around.Begin or Guard.Check is nil
	KindNoOperations          ErrorKind = "no_operations"           // an entry registered for nothing
	KindUnknownOperation      ErrorKind = "unknown_operation"       // an operation this package does not define
	KindUnguardableOperation  ErrorKind = "unguardable_operation"   // a guard on an observe-only operation
	KindDuplicateOperation    ErrorKind = "duplicate_operation"     // the same operation twice in one entry
)

// MaxRevisionLen bounds Set.PolicyRevision.
const MaxRevisionLen = 128

// CompileError reports why Compile rejected a Set. Kind is one of the Kind* constants.
// Index is the zero-based position of the offending entry in Set.Arounds or Set.Guards
// (the message says which), or -1 for an error about the set as a whole.
type CompileError struct {
	Kind    ErrorKind
	Index   int
	Message string
}

func (e *CompileError) Error() string {
	return "op: compile: " + string(e.Kind) + ": " + e.Message
}

// GuardError means a guard failed rather than decided: it returned an error that is not a
// valid *Denial, or it panicked. The operation is blocked (fail closed). Index is the
// guard's zero-based position in Set.Guards.
type GuardError struct {
	Operation Operation
	Index     int
	Guard     string
	Cause     error
}

func (e *GuardError) Error() string {
	return "op: guard " + strconv.Quote(e.Guard) + " (index " + strconv.Itoa(e.Index) +
		") failed on " + string(e.Operation) + ": " + errString(e.Cause)
}

// Unwrap returns the guard's error, or the *PanicError for a panic.
func (e *GuardError) Unwrap() error { return e.Cause }

// AsGuardError reports whether err is, or wraps, a *GuardError.
func AsGuardError(err error) (*GuardError, bool) {
	var g *GuardError
	if errors.As(err, &g) && g != nil {
		return g, true
	}
	return nil, false
}

// PanicError carries the value a guard panicked with. It does not unwrap to that value,
// so a guard that panics with a *Denial is still a failure, not a denial.
type PanicError struct {
	Value any
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("panic: %v", e.Value)
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}
