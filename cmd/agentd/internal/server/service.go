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

	"go.opentelemetry.io/otel/metric"

	"github.com/agentd-dev/agentd/cmd/agentd/internal/shadow"
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
	// Shadow, when set, describes the shadow configuration in GET /v1/status.
	Shadow func() *shadow.Summary
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

// driverError translates an error of the driver into the API's typed error.
func driverError(err error) *APIError {
	if r, ok := engine.AsRefusal(err); ok {
		switch r.Code {
		case engine.RefusedNotReady:
			return apiError(http.StatusServiceUnavailable, TypeNotReady, "%v", r)
		case engine.RefusedGenerationRetired:
			return apiError(http.StatusConflict, TypeGenerationRetired, "%v", r).with("generation", r.Generation)
		case engine.RefusedGenerationExpired:
			return apiError(http.StatusConflict, TypeGenerationExpired, "%v", r).with("generation", r.Generation)
		case engine.RefusedRequestFailed:
			return apiError(http.StatusConflict, TypeRequestFailed, "%v", r)
		case engine.RefusedConflict:
			return apiError(http.StatusConflict, TypeConflict, "%v", r)
		case engine.RefusedTenantForbidden:
			return apiError(http.StatusForbidden, TypeTenantForbidden, "%v", r)
		case engine.RefusedTooLarge:
			return apiError(http.StatusRequestEntityTooLarge, TypeRequestTooLarge, "%v", r)
		}
		return apiError(http.StatusServiceUnavailable, TypeStoreUnavailable, "state store unavailable")
	}
	if pe, ok := engine.AsPlanError(err); ok {
		return apiError(http.StatusUnprocessableEntity, TypeInvalidPlan, "%v", err).
			with("rule", pe.Rule).with("code", pe.Code).with("step_id", pe.StepID)
	}
	var contract *engine.ContractError
	if errors.As(err, &contract) {
		return apiError(http.StatusInternalServerError, TypeHookContract, "%v", err)
	}
	return apiError(http.StatusInternalServerError, TypeInternal, "%v", err)
}

// Execution returns the stored record of a request; a call confined to a tenant
// (engine.WithTenant) reads only records of that tenant, and is answered 404 for
// another tenant's, as for a record that does not exist.
func (s *Service) Execution(ctx context.Context, id string) (*engine.ExecutionRecord, *APIError) {
	rec, err := s.cfg.Records.Get(ctx, id)
	switch {
	case errors.Is(err, engine.ErrRecordNotFound):
		return nil, apiError(http.StatusNotFound, TypeNotFound, "no execution record for request %q", id)
	case err != nil:
		s.cfg.Logger.WarnContext(ctx, "read execution record", "request_id", id, "error", err.Error())
		return nil, apiError(http.StatusServiceUnavailable, TypeStoreUnavailable, "state store unavailable")
	}
	if err := engine.CheckTenant(ctx, id, rec.Tenant); err != nil {
		// Another tenant's record is answered as no record: its id tells nothing.
		return nil, apiError(http.StatusNotFound, TypeNotFound, "no execution record for request %q", id)
	}
	rec.Lifecycle = rec.LifecycleAt(time.Now())
	return rec, nil
}
