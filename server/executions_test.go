package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/api"

	"github.com/agentd-dev/agentd/engine/store"
)

func call(t *testing.T, h http.Handler, method, path, body string) (int, []byte) {
	t.Helper()
	req := newRequest(method, path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testToken)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.Bytes()
}

// The stock example's quote and rejected trade, found through the list's filters.
func TestExecutions_FiltersFindTheWalkthroughRequests(t *testing.T) {
	h := stockHandler(t)
	for _, c := range []struct{ path, body string }{
		{"/v1/hooks/before_planning", `{"request_id":"quote-1","request":"What is ACME trading at?","metadata":{"tenant":"acme"}}`},
		{"/v1/hooks/after_planning", `{"request_id":"quote-1","plan":` + quotePlan + `}`},
		{"/v1/hooks/before_planning", `{"request_id":"trade-1","request":"Buy <b>100</b> ACME","metadata":{"tenant":"acme"}}`},
		{"/v1/hooks/after_planning", `{"request_id":"trade-1","plan":` + tradePlan + `}`},
	} {
		if strings.Contains(c.body, "trade-1") && strings.Contains(c.path, "before_planning") {
			// The list orders records by the millisecond of their last change (ties by
			// request id): the trade must change in a later one than the quote.
			time.Sleep(2 * time.Millisecond)
		}
		call(t, h, http.MethodPost, c.path, c.body)
	}
	for query, want := range map[string][]string{
		"":                                  {"trade-1", "quote-1"},
		"?status=failed":                    {"trade-1"},
		"?lifecycle=open":                   {"quote-1"},
		"?violation=capability_not_allowed": {"trade-1"},
		"?reason=hook_error&stage=after_planning&hook=allowed-operations": {"trade-1"},
		"?reason=accepted": {"quote-1"},
		"?id=QUOTE":        {"quote-1"},
		"?since=2000-01-01T00:00:00Z&until=2999-01-01T00:00:00.5Z": {"trade-1", "quote-1"},
		"?since=2999-01-01T00:00:00Z":                              {},
		"?limit=1":                                                 {"trade-1"},
	} {
		code, body := call(t, h, http.MethodGet, "/v1/executions"+query, "")
		var page store.Page
		if err := json.Unmarshal(body, &page); code != http.StatusOK || err != nil {
			t.Fatalf("GET /v1/executions%s = %d %s", query, code, body)
		}
		var got []string
		for _, r := range page.Records {
			got = append(got, r.RequestID)
		}
		if !slices.Equal(got, want) && len(got)+len(want) > 0 {
			t.Errorf("GET /v1/executions%s lists %v, want %v", query, got, want)
		}
		if query == "?status=failed" && (page.Records[0].Request != "Buy <b>100</b> ACME" || page.Records[0].Violations[0] != "capability_not_allowed") {
			t.Errorf("the trade's summary = %+v", page.Records[0])
		}
		if query == "?limit=1" && page.NextCursor == "" {
			t.Errorf("a first page of 1 of 2 records has no cursor")
		}
	}
}

// Every bad query is a 400 invalid_query naming its parameter.
func TestExecutions_BadQueriesNameTheParameter(t *testing.T) {
	h := stockHandler(t)
	for query, param := range map[string]string{
		"?tenant=" + strings.Repeat("t", 257): "tenant",
		"?status=failed&status=open":          "status",
		"?status=done":                        "status",
		"?lifecycle=later":                    "lifecycle",
		"?stage=planning":                     "stage",
		"?guard=perhaps":                      "guard",
		"?since=yesterday":                    "since",
		"?until=2026-13-01T00:00:00Z":         "until",
		"?since=2026-02-01T00:00:00Z&until=2026-01-01T00:00:00Z": "until",
		"?limit=0":                          "limit",
		"?limit=-3":                         "limit",
		"?limit=many":                       "limit",
		"?limit=501":                        "limit",
		"?cursor=bm90IG1pbmU":               "cursor",
		"?hook=" + strings.Repeat("h", 257): "hook",
	} {
		code, body := call(t, h, http.MethodGet, "/v1/executions"+query, "")
		var e struct {
			Error struct {
				Type  api.ErrorType
				Param string
			}
		}
		if err := json.Unmarshal(body, &e); code != http.StatusBadRequest || err != nil || e.Error.Type != api.TypeInvalidQuery || e.Error.Param != param {
			t.Errorf("GET /v1/executions%s = %d %s, want 400 invalid_query naming %s", query, code, body, param)
		}
	}
}

// A token bound to a tenant lists that tenant's records only, whatever tenant it
// filters on; an unbound token filters on any.
func TestExecutions_TenantTokensListTheirTenantOnly(t *testing.T) {
	h := stockHandler(t)
	call(t, h, http.MethodPost, "/v1/hooks/before_planning", `{"request_id":"acme-1","request":"q","metadata":{"tenant":"acme"}}`)
	req := newRequest(http.MethodPost, "/v1/hooks/before_planning", strings.NewReader(`{"request_id":"globex-1","request":"q","metadata":{"tenant":"globex"}}`))
	req.Header.Set("Authorization", "Bearer "+globexToken)
	h.ServeHTTP(httptest.NewRecorder(), req)
	for _, c := range []struct {
		token, query string
		want         []string
	}{
		{viewerToken, "", []string{"acme-1", "globex-1"}},
		{viewerToken, "?tenant=acme", []string{"acme-1"}},
		{viewerToken, "?tenant=initech", nil},
		{globexViewerToken, "", []string{"globex-1"}},
		{globexViewerToken, "?tenant=globex", []string{"globex-1"}},
		{globexViewerToken, "?tenant=acme", nil},
	} {
		token, want := c.token, c.want
		req := newRequest(http.MethodGet, "/v1/executions"+c.query, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var page store.Page
		if err := json.Unmarshal(rec.Body.Bytes(), &page); rec.Code != http.StatusOK || err != nil {
			t.Fatalf("GET /v1/executions = %d %s", rec.Code, rec.Body)
		}
		var got []string
		for _, r := range page.Records {
			got = append(got, r.RequestID)
		}
		if slices.Sort(got); !slices.Equal(got, want) {
			t.Errorf("token %s: GET /v1/executions%s lists %v, want %v", token, c.query, got, want)
		}
	}
}
