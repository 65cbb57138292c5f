package shadow

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	"go.opentelemetry.io/otel/metric"

	"github.com/agentd-dev/agentd/compare"
	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/config/reload"
	"github.com/agentd-dev/agentd/decisionlog"
	"github.com/agentd-dev/agentd/engine"
)

// DefaultQueue is how many reports wait for evaluation at most when Config.Queue is 0.
const DefaultQueue = 1024

// Config configures a Shadow.
type Config struct {
	// Dir is the shadow configuration directory.
	Dir string
	// Live finds the generations live calls ran on (to tell a cached or rate-limited
	// answer, which the shadow cannot give, from a decision).
	Live *reload.Registry
	// Emit, when set, takes each disagreement as a decision event, with the id of the
	// live generation whose drop rules apply.
	Emit          func(e *decisionlog.Event, generation string)
	Queue         int
	MeterProvider metric.MeterProvider
	Logger        *slog.Logger
}

// Shadow is an engine.Observer that decides every reported call again with the
// shadow generation. It is safe for concurrent use.
type Shadow struct {
	cfg      Config
	registry *reload.Registry
	reloader *reload.Reloader
	queue    chan job
	stop     chan struct{}
	done     chan struct{}
	tel      *telemetry
	stats    stats
}

type job struct {
	stage *engine.StageReport
	check *engine.CheckReport
}

// New loads the shadow directory (it must compile) and starts the evaluating worker;
// Close stops it.
func New(ctx context.Context, cfg Config) (*Shadow, error) {
	if cfg.Queue <= 0 {
		cfg.Queue = DefaultQueue
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	tel, err := newTelemetry(cfg.MeterProvider)
	if err != nil {
		return nil, err
	}
	logger := cfg.Logger.With("shadow", cfg.Dir)
	registry := reload.NewRegistry(1)
	reloader, err := reload.NewReloader(cfg.Dir, config.Options{Services: compare.Services(logger), Logger: logger}, registry, logger, nil)
	if err != nil {
		return nil, err
	}
	if _, err := reloader.Reload(ctx); err != nil {
		return nil, fmt.Errorf("shadow config %s does not compile:\n%s", cfg.Dir, registry.Status().Error)
	}
	s := &Shadow{cfg: cfg, registry: registry, reloader: reloader, tel: tel,
		queue: make(chan job, cfg.Queue), stop: make(chan struct{}), done: make(chan struct{})}
	s.stats.recent = make([]Disagreement, 0, recentDisagreements)
	go s.run()
	return s, nil
}

// Reloader returns the reloader of the shadow directory, for Watch and SIGHUP.
func (s *Shadow) Reloader() *reload.Reloader { return s.reloader }

// Staged implements engine.Observer: before_planning, after_planning and
// after_synthesis calls are decided again; after_execution hooks only observe, so
// they decide nothing to compare.
func (s *Shadow) Staged(_ context.Context, r *engine.StageReport) {
	if r.Stage != engine.StageAfterExecution {
		s.enqueue(job{stage: r})
	}
}

// Checked implements engine.Observer: every check the live guards decided is decided
// again.
func (s *Shadow) Checked(_ context.Context, r *engine.CheckReport) {
	switch r.Outcome {
	case engine.OutcomeAllowed, engine.OutcomeDenied, engine.OutcomeGuardError:
		s.enqueue(job{check: r})
	}
}

// Refused implements engine.Observer: a refused call decided nothing.
func (s *Shadow) Refused(context.Context, engine.Stage, string, *engine.RefusalError) {}

func (s *Shadow) enqueue(j job) {
	select {
	case s.queue <- j:
	default:
		s.count(j.kind(), resultDropped)
	}
}

func (j job) kind() string {
	if j.check != nil {
		return config.EventCheck
	}
	return config.EventStage
}

func (s *Shadow) run() {
	defer close(s.done)
	for {
		select {
		case j := <-s.queue:
			s.evaluate(j)
		case <-s.stop:
			return
		}
	}
}

// Close stops the worker; reports still queued are not evaluated.
func (s *Shadow) Close() {
	close(s.stop)
	<-s.done
}

// evaluate decides j's call again and reports a disagreement.
func (s *Shadow) evaluate(j job) {
	gen := s.registry.Current()
	ctx := context.Background()
	var live, other compare.Verdict
	switch {
	case j.check != nil:
		live, other = compare.Checked(j.check), compare.Check(ctx, &gen.Generation, j.check.State, j.check.Call)
	case j.stage.Stage == engine.StageAfterPlanning && j.stage.Outcome != engine.OutcomeReplayed && j.stage.Plan != nil:
		live, other = compare.Staged(j.stage), compare.Plan(ctx, &gen.Generation, compare.StageInput(j.stage))
	case j.stage.Stage == engine.StageBeforePlanning && !s.statefulAnswer(j.stage):
		live, other = compare.Staged(j.stage), compare.BeforePlanning(ctx, &gen.Generation, compare.StageInput(j.stage))
	case j.stage.Stage == engine.StageAfterSynthesis:
		live, other = compare.Staged(j.stage), compare.Synthesis(ctx, &gen.Generation, compare.StageInput(j.stage))
	default:
		s.count(j.kind(), resultSkipped)
		return
	}
	change := compare.Compare(live, other)
	if change == compare.Same {
		s.count(j.kind(), resultAgree)
		return
	}
	s.disagree(j, gen, change, live, other)
}

// statefulAnswer reports whether a before_planning call was answered by a hook with a
// cache lookup or a rate limit: state the shadow does not have (its cache never
// answers, its limits never trip), so its verdict says nothing about the rules.
func (s *Shadow) statefulAnswer(r *engine.StageReport) bool {
	if r.Outcome != engine.OutcomeShortCircuit {
		return false
	}
	gen := s.cfg.Live.Get(r.Generation)
	for _, inv := range r.Invocations {
		if inv.Decision == nil || inv.Decision.Action != engine.ActionShortCircuit {
			continue
		}
		if gen == nil {
			return true // the hook's steps are unknown: do not guess
		}
		for _, h := range gen.Hooks {
			if h.Name == inv.HookName && (slices.Contains(h.Steps, "cache.lookup") || slices.Contains(h.Steps, "rate_limit")) {
				return true
			}
		}
	}
	return false
}
