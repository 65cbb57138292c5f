package op

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
)

// BeginFunc starts observing an operation. It returns the context for the next callback
// (and, in the end, for the operation itself) and an optional FinishFunc, which the
// runner calls once when the operation ends.
type BeginFunc func(ctx context.Context, call Call) (context.Context, FinishFunc)

// FinishFunc observes the end of an operation. It cannot change the outcome.
type FinishFunc func(Result)

// GuardFunc decides whether an operation may run: nil allows it, an error from Deny
// denies it, and any other error (or a panic) is a failure that also blocks it.
type GuardFunc func(ctx context.Context, call Call) error

// Around registers an observer for the listed operations, which may include the
// observe-only ones.
type Around struct {
	Name       string
	Operations []Operation
	Begin      BeginFunc
}

// Guard registers a policy check for the listed operations, which must be guardable.
type Guard struct {
	Name       string
	Operations []Operation
	Check      GuardFunc
	// ReadOnly says Check only reads the call it is given, as compiled CEL and Rego
	// guards do: it gets the runner's call rather than a deep copy of its own, and
	// must change nothing the call holds (parameters, metadata, step).
	ReadOnly bool
	// IgnoresStep says Check never reads call.Step, as compiled guards whose expression
	// or policy does not refer to the step: a caller may leave the step out.
	IgnoresStep bool
}

// Set is the configuration Compile turns into a Runner. PolicyRevision identifies the
// policy the guards enforce; it is required when there are guards and forbidden when
// there are none.
type Set struct {
	PolicyRevision string
	Arounds        []Around
	Guards         []Guard
}

// Option adjusts Compile.
type Option func(*options)

type options struct {
	logger *slog.Logger
}

// WithLogger sets the logger for callback panics and nil contexts. The default discards.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
		}
	}
}

// Runner is a compiled Set: immutable, and safe for concurrent use by any number of
// operations. A nil *Runner handles nothing.
type Runner struct {
	logger *slog.Logger
	table  [numOperations]entries
}

// entries are the callbacks registered for one operation, in registration order.
type entries struct {
	arounds []around
	guards  []guard
}

type around struct {
	name  string
	index int
	begin BeginFunc
}

type guard struct {
	name        string
	index       int
	check       GuardFunc
	readOnly    bool
	ignoresStep bool
}

// Compile validates set and indexes it by operation. It keeps no reference to set's
// slices, so changing them afterwards does not affect the Runner. It reports the first
// problem, checking the revision, then the arounds, then the guards, as a *CompileError.
func Compile(set Set, opts ...Option) (*Runner, error) {
	o := options{logger: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		opt(&o)
	}
	if err := checkRevision(set.PolicyRevision, len(set.Guards) > 0); err != nil {
		return nil, err
	}
	r := &Runner{logger: o.logger}
	for i, a := range set.Arounds {
		if err := checkEntry("arounds", i, a.Name, a.Operations, a.Begin == nil, false); err != nil {
			return nil, err
		}
		for _, op := range a.Operations {
			e := &r.table[op.index()]
			e.arounds = append(e.arounds, around{name: a.Name, index: i, begin: a.Begin})
		}
	}
	for i, g := range set.Guards {
		if err := checkEntry("guards", i, g.Name, g.Operations, g.Check == nil, true); err != nil {
			return nil, err
		}
		for _, op := range g.Operations {
			e := &r.table[op.index()]
			e.guards = append(e.guards, guard{name: g.Name, index: i, check: g.Check, readOnly: g.ReadOnly, ignoresStep: g.IgnoresStep})
		}
	}
	return r, nil
}

func checkRevision(rev string, hasGuards bool) *CompileError {
	switch {
	case !hasGuards && rev != "":
		return &CompileError{Kind: KindRevisionWithoutGuards, Index: -1,
			Message: "policy revision is set but there are no guards"}
	case !hasGuards:
		return nil
	case rev == "":
		return &CompileError{Kind: KindMissingRevision, Index: -1,
			Message: "guards require a policy revision"}
	case len(rev) > MaxRevisionLen:
		return &CompileError{Kind: KindInvalidRevision, Index: -1,
			Message: fmt.Sprintf("policy revision is longer than %d bytes", MaxRevisionLen)}
	case strings.TrimSpace(rev) == "":
		return &CompileError{Kind: KindInvalidRevision, Index: -1,
			Message: "policy revision is blank"}
	}
	if msg := checkText(rev); msg != "" {
		return &CompileError{Kind: KindInvalidRevision, Index: -1, Message: "policy revision " + msg}
	}
	return nil
}

func checkEntry(list string, i int, name string, ops []Operation, nilFn, isGuard bool) *CompileError {
	fail := func(kind ErrorKind, format string, args ...any) *CompileError {
		where := fmt.Sprintf("%s[%d] %q: ", list, i, name)
		return &CompileError{Kind: kind, Index: i, Message: where + fmt.Sprintf(format, args...)}
	}
	if strings.TrimSpace(name) == "" {
		return fail(KindMissingName, "name is required")
	}
	if nilFn {
		return fail(KindNilCallback, "callback is nil")
	}
	if len(ops) == 0 {
		return fail(KindNoOperations, "no operations listed")
	}
	for j, op := range ops {
		switch {
		case !op.Known():
			return fail(KindUnknownOperation, "operation %q is not known", op)
		case isGuard && !op.Guardable():
			return fail(KindUnguardableOperation, "operation %q is observe-only", op)
		case slices.Contains(ops[:j], op):
			return fail(KindDuplicateOperation, "operation %q is listed twice", op)
		}
	}
	return nil
}

func (r *Runner) entries(op Operation) *entries {
	i := op.index()
	if r == nil || i < 0 {
		return nil
	}
	return &r.table[i]
}
