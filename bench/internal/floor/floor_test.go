package floor

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentd-dev/agentd/bench/internal/fixture"
)

func TestFloorDecodesTheAgentdBody(t *testing.T) {
	srv := httptest.NewServer(Handler())
	defer srv.Close()
	tpl, err := fixture.AgentdBody(fixture.Plan(3, fixture.Large), "t", fixture.Unseen)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		body   []byte
		status int
	}{
		{"fixture body", tpl.Append(nil, 7), http.StatusOK},
		{"unknown field", []byte(`{"request_id":"r","plan":{},"extra":1}`), http.StatusBadRequest},
		{"wrong type", []byte(`{"request_id":"r","plan":{"steps":"no"}}`), http.StatusBadRequest},
		{"invalid UTF-8", []byte("{\"request_id\":\"\xff\",\"plan\":{}}"), http.StatusBadRequest},
		{"two values", []byte(`{"request_id":"r","plan":{}} {}`), http.StatusBadRequest},
		{"a stray brace", []byte(`{"request_id":"r","plan":{}}}`), http.StatusBadRequest},
		{"another letter case (encoding/json's)", []byte(`{"Request_ID":"r","plan":{}}`), http.StatusOK},
		{"no plan", []byte(`{"request_id":"r"}`), http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.Post(srv.URL+"/v1/hooks/after_planning", "application/json", bytes.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, got)
			}
			if tc.status == http.StatusOK && !bytes.Contains(got, []byte(`"plan":{"plan_id":"`)) {
				t.Errorf("answer %s lacks the plan the load generator checks", got)
			}
		})
	}
}
