// Package server is the agentd daemon's API: the stage calls an orchestrator makes at
// each hook point, operation checks, execution records and status, over HTTP (Handler)
// or in process (Service, used by `agentd eval`).
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/decl"
	"github.com/agentd-dev/agentd/engine/reload"
	"github.com/agentd-dev/agentd/engine/store"
)

// Config configures a Service.
type Config struct {
	Registry *reload.Registry
	Requests store.Requests
	Records  engine.RecordStore
	// RequestTTL is how long request state is kept between stage calls; 0 means 30m.
	RequestTTL time.Duration
	Logger     *slog.Logger
	// LogPayloads includes request text, metadata and responses in decision logs.
	LogPayloads   bool
	MeterProvider metric.MeterProvider
}

// Service runs stage calls against the live generation. Each request runs on the
// generation that was live at its first stage call, for all of its stages, as long as
// the registry retains it. It is safe for concurrent use; the stage calls of one
// request are expected in lifecycle order, not concurrently.
type Service struct {
	cfg Config
	tel *telemetry
}

// New returns a service.
func New(cfg Config) (*Service, error) {
	if cfg.RequestTTL <= 0 {
		cfg.RequestTTL = store.DefaultRequestTTL
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	tel, err := newTelemetry(cfg.MeterProvider)
	if err != nil {
		return nil, err
	}
	return &Service{cfg: cfg, tel: tel}, nil
}

// call is one stage call in progress: the request's state, its generation and the
// trail of this call's invocations.
type call struct {
	ctx     context.Context
	stage   engine.Stage
	state   *store.RequestState
	gen     *decl.Generation
	trail   *engine.Trail
	pctx    *engine.PipelineContext
	started time.Time
	// fresh is set while the call opens the request: its first record write replaces
	// any record a previous request with the same id left.
	fresh bool
	// invocations is the trail's snapshot once the stage ran (see recorded).
	invocations []engine.Invocation
	// response is the after_synthesis answer, logged only with payload logging on.
	response string
}

// recorded returns this call's invocations, copied from the trail once: the record,
// the response and the telemetry share that read-only snapshot.
func (c *call) recorded() []engine.Invocation {
	if c.invocations == nil {
		c.invocations = c.trail.Invocations()
	}
	return c.invocations
}

func storeError(err error) *APIError {
	return apiError(http.StatusServiceUnavailable, TypeStoreUnavailable, "state store unavailable: %v", err)
}

// begin loads the request's state, or opens it (from text and metadata, on the live
// generation) when it is unknown or fresh is set.
func (s *Service) begin(ctx context.Context, stage engine.Stage, id string, fresh bool, text *string, metadata map[string]any) (*call, *APIError) {
	c, e := s.open(ctx, stage, id, fresh, text, metadata)
	if e != nil {
		s.refused(ctx, stage, id, e)
	}
	return c, e
}

func (s *Service) open(ctx context.Context, stage engine.Stage, id string, fresh bool, text *string, metadata map[string]any) (*call, *APIError) {
	if id == "" {
		return nil, missing("request_id")
	}
	var st *store.RequestState
	if !fresh {
		got, ok, err := s.cfg.Requests.GetRequest(ctx, id)
		if err != nil {
			return nil, storeError(err)
		}
		if ok {
			st = got
		}
	}
	var gen *decl.Generation
	if st == nil {
		if gen = s.cfg.Registry.Current(); gen == nil {
			return nil, apiError(http.StatusServiceUnavailable, TypeNotReady, "no config generation is live")
		}
		st = &store.RequestState{ID: id, Generation: gen.ID, Metadata: metadata, Enrichments: map[string]any{}}
		if text != nil {
			st.Request = *text
		}
	} else if gen = s.cfg.Registry.Get(st.Generation); gen == nil {
		return nil, apiError(http.StatusConflict, TypeGenerationRetired,
			"request %q runs on config generation %s, which is no longer retained", id, st.Generation).with("generation", st.Generation)
	}
	if st.Enrichments == nil {
		st.Enrichments = map[string]any{}
	}
	gate := engine.NewGate(st.CacheVary, st.CacheReadDisabled)
	c := &call{
		stage: stage, state: st, gen: gen, trail: engine.NewTrail(), started: time.Now(), fresh: fresh,
		pctx: &engine.PipelineContext{Request: st.Request, Metadata: st.Metadata, Enrichments: st.Enrichments},
	}
	c.ctx = engine.WithRequestInfo(ctx, engine.RequestInfo{ID: id, Generation: gen.ID, Gate: gate})
	return c, nil
}

// guard runs fn, turning a hook panic into a failed record before re-raising it.
func (s *Service) guard(c *call, fn func() *APIError) (apiErr *APIError) {
	defer func() {
		if r := recover(); r != nil {
			err := fmt.Errorf("pipeline hook panic: %v", r)
			_ = s.commit(c, false, func(rec *engine.ExecutionRecord) { failRecord(rec, err) })
			s.observe(c, "panic")
			panic(r)
		}
	}()
	return fn()
}

// commit saves the request state (when keep) and appends this call's invocations to the
// execution record, applying fn to it too. Late effect updates rewrite the record again.
func (s *Service) commit(c *call, keep bool, fn func(rec *engine.ExecutionRecord)) *APIError {
	ctx := context.WithoutCancel(c.ctx)
	if keep {
		c.state.Enrichments = c.pctx.Enrichments
		if err := s.cfg.Requests.PutRequest(ctx, c.state, s.cfg.RequestTTL); err != nil {
			e := storeError(err)
			s.refused(ctx, c.stage, c.state.ID, e)
			return e
		}
	}
	invocations := c.recorded()
	offset := -1
	err := s.updateRecord(ctx, c, func(rec *engine.ExecutionRecord) {
		offset = len(rec.PipelineHooks)
		rec.PipelineHooks = append(rec.PipelineHooks, invocations...)
		if fn != nil {
			fn(rec)
		}
	})
	if err != nil {
		e := storeError(err)
		s.refused(ctx, c.stage, c.state.ID, e)
		return e
	}
	c.trail.OnLateEffect(func() {
		late := c.trail.Invocations()
		_ = s.updateRecord(ctx, c, func(rec *engine.ExecutionRecord) {
			if offset >= 0 && offset+len(late) <= len(rec.PipelineHooks) {
				copy(rec.PipelineHooks[offset:], late)
			}
		})
	})
	return nil
}

// updateRecord applies fn to the request's record and writes it as the next revision,
// retrying when a concurrent rewrite landed first.
func (s *Service) updateRecord(ctx context.Context, c *call, fn func(rec *engine.ExecutionRecord)) error {
	for range 8 {
		rec, err := s.cfg.Records.Get(ctx, c.state.ID)
		switch {
		case errors.Is(err, engine.ErrRecordNotFound):
			rec = newRecord(c)
		case err != nil:
			return err
		case c.fresh:
			revision := rec.Revision
			rec = newRecord(c)
			rec.Revision = revision
		}
		fn(rec)
		rec.Revision++
		rec.UpdatedAt = time.Now().UTC()
		err = s.cfg.Records.Put(ctx, rec)
		if !errors.Is(err, engine.ErrStaleRevision) {
			if err == nil {
				c.fresh = false
			}
			return err
		}
	}
	return fmt.Errorf("execution record %q: too many concurrent rewrites", c.state.ID)
}

func newRecord(c *call) *engine.ExecutionRecord {
	now := time.Now().UTC()
	return &engine.ExecutionRecord{
		RequestID: c.state.ID, Generation: c.gen.ID, Status: engine.RecordRunning,
		PipelineHooks: []engine.Invocation{}, CreatedAt: now, UpdatedAt: now,
	}
}

func failRecord(rec *engine.ExecutionRecord, err error) {
	rec.Status = engine.RecordFailed
	rec.Error = err.Error()
}
