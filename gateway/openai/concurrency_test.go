package openai

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestGateway_ConcurrentConversations runs many conversations at once through one
// gateway (run it with -race): each gets its own request, its round reviewed and its
// answer, and no two mix.
func TestGateway_ConcurrentConversations(t *testing.T) {
	up := scriptedUpstream(t)
	g := newTestGateway(t, exampleGeneration(t, up.URL+"/v1", ""), 0)
	post := func(body string) (*httptest.ResponseRecorder, map[string]any) {
		rec := httptest.NewRecorder()
		g.chat(rec, httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body)))
		var out map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &out)
		return rec, out
	}
	const n = 16
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			user := `{"role":"user","content":"quote ` + strconv.Itoa(i) + `"}`
			rec, out := post(`{"messages":[` + user + `]}`)
			if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"get_quote"`) {
				t.Errorf("conversation %d, round 1: %d %s", i, rec.Code, rec.Body)
				return
			}
			ids[i] = rec.Header().Get("X-Request-Id")
			callID := out["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["tool_calls"].([]any)[0].(map[string]any)["id"].(string)
			assistant := `{"role":"assistant","content":null,"tool_calls":[{"id":"` + callID + `","type":"function","function":{"name":"get_quote","arguments":"{\"symbol\":\"ACME\"}"}}]}`
			tool := `{"role":"tool","tool_call_id":"` + callID + `","content":"{\"price\":` + strconv.Itoa(i) + `}"}`
			rec, _ = post(`{"messages":[` + user + `,` + assistant + `,` + tool + `]}`)
			if rec.Code != http.StatusOK || rec.Header().Get("X-Request-Id") != ids[i] {
				t.Errorf("conversation %d, round 2: %d %s (request %q, round 1 was %q)", i, rec.Code, rec.Body, rec.Header().Get("X-Request-Id"), ids[i])
			}
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for i, id := range ids {
		if seen[id] {
			t.Errorf("conversation %d shares request %q", i, id)
		}
		seen[id] = true
	}
}
