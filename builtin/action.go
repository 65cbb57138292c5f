package builtin

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/expr"
	"github.com/agentd-dev/agentd/engine/store"
)

// Action is one compiled step of a declarative hook. Run may read and change s; an
// error ends the hook (the stage's failure policy then applies). An action that
// decides the hook's outcome sets s.Decision, which ends the hook without error.
type Action interface {
	Run(ctx context.Context, s *State) error
}

// Describer is an Action that tells how it runs beyond its name and parameters;
// agentd check and GET /v1/status show the description under the hook.
type Describer interface {
	Describe() string
}

// State is what the steps of one hook invocation share. A State belongs to one
// invocation and is never used by two goroutines.
type State struct {
	Stage engine.Stage
	Info  engine.RequestInfo
	Pctx  *engine.PipelineContext
	// Plan is the hook's own copy of the plan (after_planning); actions may change or
	// replace it.
	Plan *engine.RoutingPlan
	// Result is the combined execution result (after_execution), read-only.
	Result *engine.ExecutionResult
	// Response is the response being rewritten (after_synthesis).
	Response string
	// Decision ends the hook with a before_planning short circuit when set.
	Decision *engine.ShortCircuitDecision
	vars     expr.Vars
	varsSet  bool
}

// Vars returns the CEL variables of the state, reflecting its current plan, result and
// response.
func (s *State) Vars() *expr.Vars {
	if !s.varsSet {
		s.vars = expr.Vars{Request: s.Pctx.Request, Metadata: s.Pctx.Metadata, Enrichments: s.Pctx.Enrichments}
		s.varsSet = true
	}
	s.vars.Enrichments = s.Pctx.Enrichments
	if s.vars.Plan != s.Plan || s.vars.Response != s.Response || s.vars.Result != s.Result {
		s.vars.Plan, s.vars.Response, s.vars.Result = s.Plan, s.Response, s.Result
		if s.Plan != nil {
			s.vars.Phase = max(s.Plan.PhaseNumber, 1)
		}
		s.vars.Reset()
	}
	return &s.vars
}

// PlanChanged must be called after an action mutates s.Plan in place, so later CEL
// evaluations see the change.
func (s *State) PlanChanged() {
	s.vars.Reset()
}

// Services are the shared dependencies actions use at run time. A zero field gets a
// default in-process implementation from WithDefaults.
type Services struct {
	Cache   store.Cache
	Limiter store.Limiter
	HTTP    *http.Client
	Logger  *slog.Logger
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// WithDefaults fills every nil field with an in-process default.
func (s Services) WithDefaults() Services {
	if s.Cache == nil || s.Limiter == nil {
		m := store.NewMemory(store.MemoryOptions{})
		if s.Cache == nil {
			s.Cache = m
		}
		if s.Limiter == nil {
			s.Limiter = m
		}
	}
	if s.HTTP == nil {
		s.HTTP = &http.Client{Timeout: 5 * time.Second}
	}
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	return s
}
