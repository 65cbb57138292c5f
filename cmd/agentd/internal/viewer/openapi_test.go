package viewer_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentd-dev/agentd/docs"
)

// The viewer's answers match docs/openapi.yaml: each status a call gets is one the
// document lists for the route, and each JSON body matches its schema.
func TestViewer_AnswersMatchTheAPIDocument(t *testing.T) {
	const url = "https://agentd.dev/openapi.json"
	raw, err := jsonschema.UnmarshalJSON(bytes.NewReader(docs.OpenAPIJSON()))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(url, raw); err != nil {
		t.Fatal(err)
	}
	paths := raw.(map[string]any)["paths"].(map[string]any)
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
		resp, ok := paths[c2.tmpl].(map[string]any)["get"].(map[string]any)["responses"].(map[string]any)[fmt.Sprint(rec.Code)].(map[string]any)
		if !ok {
			t.Errorf("GET %s answered %d, which docs/openapi.yaml does not list for %s", c2.path, rec.Code, c2.tmpl)
			continue
		}
		if !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
			continue
		}
		loc := "#/paths/" + strings.ReplaceAll(c2.tmpl, "/", "~1") + "/get/responses/" + fmt.Sprint(rec.Code)
		if ref, ok := resp["$ref"].(string); ok {
			loc = ref
		}
		s, err := c.Compile(url + loc + "/content/application~1json/schema")
		if err != nil {
			t.Fatalf("%s: %v", loc, err)
		}
		body, err := jsonschema.UnmarshalJSON(bytes.NewReader(rec.Body.Bytes()))
		if err != nil {
			t.Fatalf("GET %s: %v", c2.path, err)
		}
		if err := s.Validate(body); err != nil {
			t.Errorf("GET %s (%d) does not match docs/openapi.yaml: %v\n%s", c2.path, rec.Code, err, rec.Body)
		}
	}
}

// call makes an admin's call on h.
func call(t *testing.T, h http.Handler, method, path, body string) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	h.ServeHTTP(httptest.NewRecorder(), req)
}
