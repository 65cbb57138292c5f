package viewer_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/docs/apitest"
)

// The viewer's answers match docs/openapi.yaml: each status a call gets is one the
// document lists for the route, and each JSON body matches its schema.
func TestViewer_AnswersMatchTheAPIDocument(t *testing.T) {
	doc := apitest.Load(t)
	h := daemon(t)
	call(t, h, "POST", "/v1/hooks/after_planning", `{"request_id":"trade-1","request":"Buy","plan":{"plan_id":"p","steps":[`+
		`{"step_id":"step-1","agent_name":"stock-service","namespace":"demo-tools","instruction":"buy","metadata":{"capability":"execute_trade","parameters":{"amount":1}}}]}}`)
	for _, c2 := range []struct {
		path, tmpl string
		auth       bool
	}{
		{"/ui/", "/ui/", true},
		{"/ui/", "/ui/", false},
		{"/ui/nothing.js", "/ui/", true},
		{"/ui/public/login.html", "/ui/public/", false},
		{"/ui/public/nothing", "/ui/public/", false},
		{"/ui/settings.json", "/ui/settings.json", true},
		{"/ui/settings.json", "/ui/settings.json", false},
		{"/ui/graphs/trade-1", "/ui/graphs/{request_id}", true},
		{"/ui/graphs/nobody", "/ui/graphs/{request_id}", true},
		{"/ui/graphs/trade-1", "/ui/graphs/{request_id}", false},
	} {
		var header []string
		if c2.auth {
			header = bearer
		}
		rec := get(t, h, c2.path, header...)
		if c2.path == "/ui/graphs/trade-1" && c2.auth && !bytes.Contains(rec.Body.Bytes(), []byte(`"rejected":true`)) {
			t.Errorf("the rejected trade has no rejected candidate's graph: %s", rec.Body)
		}
		status := strconv.Itoa(rec.Code)
		schema, ok := doc.Response(t, "GET", c2.tmpl, status)
		if !ok {
			t.Errorf("GET %s answered %d, which docs/openapi.yaml does not list for %s", c2.path, rec.Code, c2.tmpl)
			continue
		}
		if strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
			apitest.Validate(t, fmt.Sprintf("GET %s (%d)", c2.path, rec.Code), schema, rec.Body.Bytes())
		}
	}
}

// call makes an admin's call on h.
func call(t *testing.T, h http.Handler, method, path, body string) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	h.ServeHTTP(httptest.NewRecorder(), req)
}
