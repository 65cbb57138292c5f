package shadow

import (
	"context"
	"sync"
	"time"

	"github.com/agentd-dev/agentd/compare"
	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/config/reload"
	"github.com/agentd-dev/agentd/decisionlog"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
)

// recentDisagreements is how many disagreements the summary lists.
const recentDisagreements = 20

// Summary is the shadow's part of GET /v1/status.
type Summary struct {
	Dir            string        `json:"dir"`
	Generation     string        `json:"generation,omitempty"`
	PolicyRevision string        `json:"policy_revision,omitempty"`
	LastReload     reload.Status `json:"last_reload"`
	// Evaluated counts the calls decided again; Agreed and Disagreed split them.
	// Skipped counts calls with nothing to compare, Dropped those the full queue lost.
	Evaluated int64 `json:"evaluated"`
	Agreed    int64 `json:"agreed"`
	Disagreed int64 `json:"disagreed"`
	Skipped   int64 `json:"skipped"`
	Dropped   int64 `json:"dropped"`
	// Changes counts the disagreements by change (newly_denied, newly_allowed, changed).
	Changes map[compare.Change]int64 `json:"changes"`
	// Recent are the latest disagreements, newest first.
	Recent []Disagreement `json:"recent"`
}

// Disagreement is one call the shadow decided otherwise.
type Disagreement struct {
	DecisionID string          `json:"decision_id"`
	RequestID  string          `json:"request_id"`
	Stage      engine.Stage    `json:"stage,omitempty"`
	Operation  op.Operation    `json:"operation,omitempty"`
	StepID     string          `json:"step_id,omitempty"`
	At         time.Time       `json:"at"`
	Change     compare.Change  `json:"change"`
	Live       compare.Verdict `json:"live"`
	Shadow     compare.Verdict `json:"shadow"`
	// tenant is the request's tenant ("" for none), which ForTenant filters on.
	tenant string
}

type stats struct {
	mu                                  sync.Mutex
	agreed, disagreed, skipped, dropped int64
	changes                             map[compare.Change]int64
	recent                              []Disagreement // oldest first
}

// count records one evaluation's result.
func (s *Shadow) count(kind, result string) {
	s.tel.evaluated(kind, result)
	s.stats.mu.Lock()
	defer s.stats.mu.Unlock()
	switch result {
	case resultAgree:
		s.stats.agreed++
	case resultSkipped:
		s.stats.skipped++
	case resultDropped:
		s.stats.dropped++
	}
}

// disagree records and reports a disagreement.
func (s *Shadow) disagree(j job, gen *config.Generation, change compare.Change, live, other compare.Verdict) {
	d := Disagreement{Change: change, Live: live, Shadow: other}
	e := &decisionlog.Event{SchemaVersion: decisionlog.SchemaVersion, Kind: config.EventShadow, Outcome: string(live.Outcome)}
	liveGen := ""
	if r := j.check; r != nil {
		d.DecisionID, d.RequestID, d.Operation, d.StepID, d.At = r.DecisionID, r.Call.RequestID, r.Call.Operation, r.Call.StepID, r.Started.UTC()
		if r.State != nil {
			d.tenant = engine.TenantOf(r.State.Metadata)
		}
		e.PolicyRevision, liveGen = r.PolicyRevision, r.Generation
	} else {
		r := j.stage
		d.DecisionID, d.RequestID, d.Stage, d.At, d.tenant = r.DecisionID, r.RequestID, r.Stage, r.Started.UTC(), engine.TenantOf(r.Metadata)
		e.PolicyRevision, liveGen = r.PolicyRevision, r.Generation
	}
	e.DecisionID, e.RequestID, e.Stage, e.Operation, e.StepID, e.Timestamp, e.Generation = d.DecisionID, d.RequestID, d.Stage, d.Operation, d.StepID, d.At, liveGen
	e.Shadow = &decisionlog.Shadow{Generation: gen.ID, PolicyRevision: gen.PolicyRevision, Change: change, Live: live, Verdict: other}

	decision := string(d.Stage) + string(d.Operation)
	s.tel.evaluated(j.kind(), resultDisagree)
	s.tel.disagreed(decision, string(change))
	s.stats.mu.Lock()
	s.stats.disagreed++
	if s.stats.changes == nil {
		s.stats.changes = map[compare.Change]int64{}
	}
	s.stats.changes[change]++
	if len(s.stats.recent) == recentDisagreements {
		s.stats.recent = append(s.stats.recent[:0], s.stats.recent[1:]...)
	}
	s.stats.recent = append(s.stats.recent, d)
	s.stats.mu.Unlock()
	if s.cfg.Emit != nil {
		s.cfg.Emit(e, liveGen)
	}
}

// Summary describes the shadow generation, its last reload and what it found.
func (s *Shadow) Summary() *Summary {
	out := &Summary{Dir: s.cfg.Dir, LastReload: s.registry.Status(), Changes: map[compare.Change]int64{}, Recent: []Disagreement{}}
	if g := s.registry.Current(); g != nil {
		out.Generation, out.PolicyRevision = g.ID, g.PolicyRevision
	}
	s.stats.mu.Lock()
	defer s.stats.mu.Unlock()
	out.Agreed, out.Disagreed, out.Skipped, out.Dropped = s.stats.agreed, s.stats.disagreed, s.stats.skipped, s.stats.dropped
	out.Evaluated = out.Agreed + out.Disagreed
	for k, v := range s.stats.changes {
		out.Changes[k] = v
	}
	for i := len(s.stats.recent) - 1; i >= 0; i-- {
		out.Recent = append(out.Recent, s.stats.recent[i])
	}
	return out
}

// ForTenant is the summary as a caller confined to tenant may see it: the recent
// disagreements of that tenant's requests only, and none of the daemon-wide counts
// (all 0), which would tell of other tenants' calls.
func (s *Summary) ForTenant(tenant string) *Summary {
	out := &Summary{Dir: s.Dir, Generation: s.Generation, PolicyRevision: s.PolicyRevision, LastReload: s.LastReload,
		Changes: map[compare.Change]int64{}, Recent: []Disagreement{}}
	for _, d := range s.Recent {
		if d.tenant == tenant {
			out.Recent = append(out.Recent, d)
		}
	}
	return out
}

// StatusFor describes the shadow configuration to the caller of ctx, as GET /v1/status
// shows it (server.Config.Shadow): to a caller confined to a tenant
// (engine.TenantFrom), only that tenant's disagreements (Summary.ForTenant).
func (s *Shadow) StatusFor(ctx context.Context) any {
	sum := s.Summary()
	if sum == nil {
		return nil
	}
	if tenant, ok := engine.TenantFrom(ctx); ok {
		return sum.ForTenant(tenant)
	}
	return sum
}
