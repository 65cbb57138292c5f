// Package server is the agentd daemon's API over HTTP: it translates the stage calls an
// orchestrator makes at each hook point, operation checks, execution records and status
// to and from the request driver (engine.Driver), which owns every stage semantic.
package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/agentd-dev/agentd/api"

	"go.opentelemetry.io/otel/metric"

	"github.com/agentd-dev/agentd/config/reload"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/store"
)

// Config configures a Service.
type Config struct {
	Registry *reload.Registry
	States   engine.StateStore
	Records  store.RecordStore
	// RequestTTL is how long request state is kept between stage calls; 0 means
	// engine.DefaultStateTTL.
	RequestTTL time.Duration
	Logger     *slog.Logger
	// MaxRecordEntries bounds the entries of one execution record (see
	// engine.DriverConfig); 0 means the engine's default.
	MaxRecordEntries int
	// LogPayloads lets a hook panic's value into the log (it may quote the request).
	LogPayloads   bool
	MeterProvider metric.MeterProvider
	// Observer is told about every call after the service's own metrics: the decision
	// log and the shadow configuration (see engine.Observers). Nil tells no one else.
	Observer engine.Observer
	// Shadow, when set, describes the shadow configuration in GET /v1/status
	// (api.StatusBody.Shadow); nil leaves it out.
	Shadow func() any
}

// Service serves the API on a driver over the registry's generations. It is safe for
// concurrent use.
type Service struct {
	cfg    Config
	tel    *telemetry
	driver *engine.Driver
}

// New returns a service.
func New(cfg Config) (*Service, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	tel, err := newTelemetry(cfg.MeterProvider)
	if err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, tel: tel}
	s.driver, err = engine.NewDriver(engine.DriverConfig{
		Generations: cfg.Registry, States: cfg.States, Records: cfg.Records,
		StateTTL: cfg.RequestTTL, Observer: engine.Observers(s, cfg.Observer), MaxRecordEntries: cfg.MaxRecordEntries,
		KeepPlans: true, // the handlers decode every plan anew, the gateways build theirs, and all only read answers
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Driver returns the request driver the service translates to.
func (s *Service) Driver() *engine.Driver { return s.driver }

// Execution returns the stored record of a request; a call confined to a tenant
// (engine.WithTenant) reads only records of that tenant.
func (s *Service) Execution(ctx context.Context, id string) (*engine.ExecutionRecord, *api.Error) {
	rec, err := s.cfg.Records.Get(ctx, id)
	switch {
	case errors.Is(err, engine.ErrRecordNotFound):
		return nil, api.Errorf(http.StatusNotFound, api.TypeNotFound, "no execution record for request %q", id)
	case err != nil:
		s.cfg.Logger.WarnContext(ctx, "read execution record", "request_id", id, "error", err.Error())
		return nil, api.Errorf(http.StatusServiceUnavailable, api.TypeStoreUnavailable, "state store unavailable")
	}
	if err := engine.CheckTenant(ctx, id, rec.Tenant); err != nil {
		return nil, api.ErrorOf(err)
	}
	rec.Lifecycle = rec.LifecycleAt(time.Now())
	return rec, nil
}
