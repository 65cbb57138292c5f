package server

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/agentd-dev/agentd/api"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/store"
)

// listParams are the query parameters of GET /v1/executions, each with the Query field
// it sets.
var listParams = map[string]func(q *store.Query, v string) error{
	"status":     func(q *store.Query, v string) error { q.Status = engine.RecordStatus(v); return nil },
	"lifecycle":  func(q *store.Query, v string) error { q.Lifecycle = engine.RequestLifecycle(v); return nil },
	"stage":      func(q *store.Query, v string) error { q.Stage = engine.Stage(v); return nil },
	"hook":       func(q *store.Query, v string) error { q.Hook = v; return nil },
	"reason":     func(q *store.Query, v string) error { q.Reason = engine.Reason(v); return nil },
	"violation":  func(q *store.Query, v string) error { q.Violation = v; return nil },
	"guard":      func(q *store.Query, v string) error { q.Guard = engine.CheckOutcome(v); return nil },
	"generation": func(q *store.Query, v string) error { q.Generation = v; return nil },
	"tenant":     func(q *store.Query, v string) error { q.Tenant = v; return nil },
	"id":         func(q *store.Query, v string) error { q.IDContains = v; return nil },
	"cursor":     func(q *store.Query, v string) error { q.Cursor = v; return nil },
	"since":      func(q *store.Query, v string) (err error) { q.Since, err = time.Parse(time.RFC3339Nano, v); return },
	"until":      func(q *store.Query, v string) (err error) { q.Until, err = time.Parse(time.RFC3339Nano, v); return },
	"limit": func(q *store.Query, v string) (err error) {
		if q.Limit, err = strconv.Atoi(v); err == nil && q.Limit == 0 {
			return errors.New("must be at least 1")
		}
		return err
	},
}

// parseListQuery reads the query parameters of GET /v1/executions: each at most once,
// none unknown, times in RFC 3339, and the values store.Query.Validate accepts.
func parseListQuery(values url.Values) (store.Query, *api.Error) {
	var q store.Query
	for name, vs := range values {
		set, ok := listParams[name]
		switch {
		case !ok:
			return q, invalidQuery(name, "is not a parameter of this route")
		case len(vs) > 1:
			return q, invalidQuery(name, "is given more than once")
		}
		if err := set(&q, vs[0]); err != nil {
			return q, invalidQuery(name, "is malformed")
		}
	}
	var qe *store.QueryError
	if err := q.Validate(); errors.As(err, &qe) {
		return q, invalidQuery(qe.Param, qe.Reason)
	}
	return q, nil
}

func invalidQuery(param, reason string) *api.Error {
	return api.Errorf(http.StatusBadRequest, api.TypeInvalidQuery, "query parameter %s %s", param, reason).With("param", param)
}

// Executions lists the stored records q selects, newest first; each record's
// lifecycle is reported as of the call. A call confined to a tenant
// (engine.WithTenant) lists only records of that tenant: filtering on another tenant
// lists none.
func (s *Service) Executions(ctx context.Context, q store.Query) (*store.Page, *api.Error) {
	if tenant, ok := engine.TenantFrom(ctx); ok {
		if q.Tenant != "" && q.Tenant != tenant {
			return &store.Page{Records: []store.Summary{}}, nil
		}
		q.Tenant = tenant
	}
	page, err := s.cfg.Records.List(ctx, q)
	var qe *store.QueryError
	switch {
	case errors.As(err, &qe):
		return nil, invalidQuery(qe.Param, qe.Reason)
	case err != nil:
		s.cfg.Logger.WarnContext(ctx, "list execution records", "error", err.Error())
		return nil, api.ErrorOf(engine.StoreFailure("", err))
	}
	now := time.Now()
	for i := range page.Records {
		page.Records[i].Lifecycle = page.Records[i].LifecycleAt(now)
	}
	return &page, nil
}
