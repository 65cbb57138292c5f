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

	"github.com/agentd-dev/agentd/config/bundle"
	"github.com/agentd-dev/agentd/config/reload"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/store"
)

// Config configures a Service. Registry, Driver and Records are required.
type Config struct {
	Registry *reload.Registry
	// Driver runs the stage calls and checks. The host builds it over Registry, with
	// KeepPlans set (the handlers decode every plan anew and only read answers) and
	// the service's Metrics among its observers.
	Driver *engine.Driver
	// Records are the execution records GET /v1/executions reads: the driver's.
	Records store.QueryableRecords
	Logger  *slog.Logger
	// LogPayloads lets a hook panic's value into the log (it may quote the request).
	LogPayloads bool
	// Shadow, when set, describes the shadow configuration in GET /v1/status
	// (api.StatusBody.Shadow) to the caller of ctx, who may be confined to a tenant
	// (engine.TenantFrom); nil leaves it out.
	Shadow func(ctx context.Context) any
	// Bundles, when set, is the state of each bundle the live config comes from, in
	// OPA's status format (GET /v1/status, under bundles).
	Bundles func() map[string]bundle.Status
	// Store is the kind of store the states and records live in (bolt, memory or
	// redis), shown by GET /v1/status.
	Store string
}

// Service serves the API on a driver over the registry's generations. It is safe for
// concurrent use.
type Service struct {
	cfg    Config
	driver *engine.Driver
}

// New returns a service.
func New(cfg Config) (*Service, error) {
	if cfg.Registry == nil || cfg.Driver == nil || cfg.Records == nil {
		return nil, errors.New("server: Config needs a Registry, a Driver and Records")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg, driver: cfg.Driver}, nil
}

// Execution returns the stored record of a request; a call confined to a tenant
// (engine.WithTenant) reads only records of that tenant, and is answered 404 for
// another tenant's, as for a record that does not exist.
func (s *Service) Execution(ctx context.Context, id string) (*engine.ExecutionRecord, *api.Error) {
	rec, err := s.cfg.Records.Get(ctx, id)
	switch {
	case errors.Is(err, engine.ErrRecordNotFound):
		return nil, api.Errorf(http.StatusNotFound, api.TypeNotFound, "no execution record for request %q", id)
	case err != nil:
		s.cfg.Logger.WarnContext(ctx, "read execution record", "request_id", id, "error", err.Error())
		return nil, api.ErrorOf(engine.StoreFailure(id, err))
	}
	if err := engine.CheckTenant(ctx, id, rec.Tenant); err != nil {
		// Another tenant's record is answered as no record: its id tells nothing.
		return nil, api.Errorf(http.StatusNotFound, api.TypeNotFound, "no execution record for request %q", id)
	}
	rec.Lifecycle = rec.LifecycleAt(time.Now())
	return rec, nil
}
