package server

import (
	"context"
	"errors"
	"net/url"
	"testing"

	"github.com/agentd-dev/agentd/api"

	"github.com/agentd-dev/agentd/engine/store"
)

// FuzzListQuery parses arbitrary query strings as GET /v1/executions would: a query is
// either refused with an invalid_query naming a parameter of the route, or accepted
// and then listed by the memory store without error; an accepted cursor decodes to a
// position that encodes back to it.
func FuzzListQuery(f *testing.F) {
	for _, seed := range []string{
		"", "status=failed", "lifecycle=abandoned&stage=after_planning&hook=allowed-operations",
		"reason=hook_error&violation=capability_not_allowed&guard=deny&generation=g-1",
		"since=2026-01-01T00:00:00Z&until=2026-01-02T00:00:00.5Z&id=trade&limit=10",
		"cursor=" + store.Position{Millis: 1767225600000, ID: "trade-1"}.Cursor(), "limit=0", "status=a&status=b", "%zz", "tenant=acme",
	} {
		f.Add(seed)
	}
	mem := store.NewMemory(store.MemoryOptions{})
	f.Fuzz(func(t *testing.T, raw string) {
		values, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		q, e := parseListQuery(values)
		if e != nil {
			param, _ := e.Details["param"].(string)
			if e.Type != api.TypeInvalidQuery || e.Status != 400 || !values.Has(param) && param != "until" {
				t.Fatalf("query %q refused with %v (param %q)", raw, e, param)
			}
			return
		}
		if _, err := mem.List(context.Background(), q); err != nil {
			var qe *store.QueryError
			t.Fatalf("query %q accepted, then List: %v (a QueryError: %v)", raw, err, errors.As(err, &qe))
		}
		if p, err := q.CursorPosition(); err != nil || p.Cursor() != q.Cursor {
			t.Fatalf("cursor %q decodes to %+v, %v, which encodes to %q", q.Cursor, p, err, p.Cursor())
		}
	})
}
