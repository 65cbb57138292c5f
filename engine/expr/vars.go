package expr

import (
	"time"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
)

// Vars holds the values of the variables for one evaluation context; it is the cel-go
// activation itself, so evaluating needs no map of bindings. Fill in the fields a scope
// uses and leave the others zero. The variables declared as maps (metadata,
// enrichments, call) read a nil value as an empty map; plan, step and result are
// declared dyn and read a nil value as null.
//
// Plan, Step, Result and Call are converted to their JSON form (engine.View: JSON field
// names, omitempty fields absent when empty, nil slices as null, times as RFC 3339
// strings, durations as int64 nanoseconds) the first time an expression resolves them,
// and the conversion is cached in the Vars, as is the time of now; a zero Now resolves
// to time.Now() at first use.
// Metadata, Enrichments and nested parameter and metadata values are read in place and
// never modified.
//
// Because resolving fills the caches, a Vars must not be used by several goroutines at
// once. Call Reset after changing Plan, Step, Result, Call or Now (or SetStep to change
// only the step); the other fields may change freely between evaluations.
type Vars struct {
	Request     string
	Metadata    map[string]any
	Enrichments map[string]any
	Plan        *engine.RoutingPlan
	Phase       int
	Step        *engine.RoutingStep
	Result      *engine.ExecutionResult
	Response    string
	Call        *op.Call
	// Flow gives labels and history (nil reads as empty lists); Reported is the
	// result of the label scope, a JSON-shaped value read in place, which result
	// resolves to when Result is nil.
	Flow     *op.Flow
	Reported any
	Now      time.Time

	plan, step, result, call, labels, history any
	now                                       ref.Val
	// request is Request as CEL reads it, boxed once; requestOf is the Request it holds.
	request    any
	requestOf  string
	iterations int64 // comprehension iterations of the running evaluation
}

var _ interpreter.Activation = (*Vars)(nil)

// emptyObject stands in for a nil map; CEL never modifies it.
var emptyObject = map[string]any{}

// The Viewers of the values Vars reads.
var (
	planViews   = engine.ViewerOf[engine.RoutingPlan]()
	stepViews   = engine.ViewerOf[engine.RoutingStep]()
	resultViews = engine.ViewerOf[engine.ExecutionResult]()
	callViews   = engine.ViewerOf[op.Call]()
)

// Reset forgets the cached conversions and the resolved time of now.
func (v *Vars) Reset() {
	v.plan, v.step, v.result, v.call, v.labels, v.history, v.now = nil, nil, nil, nil, nil, nil, nil
}

// SetStep sets Step and forgets only its cached conversion, so the plan conversion is kept
// while a where expression runs over every step of one plan.
func (v *Vars) SetStep(s *engine.RoutingStep) {
	v.Step, v.step = s, nil
}

// ResolveName implements interpreter.Activation.
func (v *Vars) ResolveName(name string) (any, bool) {
	switch name {
	case varRequest:
		if v.request == nil || v.requestOf != v.Request {
			v.request, v.requestOf = v.Request, v.Request
		}
		return v.request, true
	case varMetadata:
		return objectOrEmpty(v.Metadata), true
	case varEnrichments:
		return objectOrEmpty(v.Enrichments), true
	case varNow:
		if v.now == nil {
			t := v.Now
			if t.IsZero() {
				t = time.Now()
			}
			v.now = types.Timestamp{Time: t}
		}
		return v.now, true
	case varPlan:
		if v.plan == nil {
			v.plan = orNull(planViews.View(v.Plan))
		}
		return v.plan, true
	case varPhase:
		return int64(v.Phase), true
	case varStep:
		if v.step == nil {
			v.step = orNull(stepViews.View(v.Step))
		}
		return v.step, true
	case varResult:
		if v.result == nil {
			v.result = orNull(resultViews.View(v.Result))
			if v.Result == nil && v.Reported != nil {
				v.result = v.Reported
			}
		}
		return v.result, true
	case varLabels:
		if v.labels == nil {
			v.labels = labelsValue(nil)
			if v.Flow != nil {
				v.labels = labelsValue(v.Flow.Labels)
			}
		}
		return v.labels, true
	case varHistory:
		if v.history == nil {
			v.history = historyValue(v.Flow)
		}
		return v.history, true
	case varResponse:
		return v.Response, true
	case varCall:
		if v.call == nil {
			v.call = emptyObject
			if v.Call != nil {
				v.call = callValue(v.Call)
			}
		}
		return v.call, true
	}
	return nil, false
}

// Parent implements interpreter.Activation; Vars has none.
func (v *Vars) Parent() interpreter.Activation { return nil }

func objectOrEmpty(m map[string]any) map[string]any {
	if m == nil {
		return emptyObject
	}
	return m
}

// callValue is the call's JSON form plus, for a call bound to a plan step, that step as
// step (op.Call.Step, which the call's JSON leaves out).
func callValue(c *op.Call) map[string]any {
	m := celValue(callViews.View(c)).(map[string]any)
	if c.Step != nil {
		m["step"] = c.Step
	}
	m["labels"] = labelsValue(c.Labels)
	return m
}

// labelsValue is a label list as CEL reads it: a list of strings as []any, which the
// size checks of Program.fits know.
func labelsValue(l []string) []any {
	out := make([]any, len(l))
	for i, s := range l {
		out[i] = s
	}
	return out
}

// historyValue is a flow's history as CEL reads it: one object per step (historyStep,
// which reads the step in place).
func historyValue(f *op.Flow) []any {
	if f == nil {
		return []any{}
	}
	out := make([]any, len(f.History))
	for i := range f.History {
		out[i] = historyStep{&f.History[i]}
	}
	return out
}

// orNull converts v, a wire value, or returns CEL's null for a nil one.
func orNull(v engine.View) any {
	if v.Kind() == engine.ViewNull {
		return types.NullValue
	}
	return celValue(v)
}
