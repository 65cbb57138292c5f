package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/api"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/config/reload"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/store"
)

// fuzzRoutes are the API routes that take a body, indexed by the fuzzer's route byte.
var fuzzRoutes = []string{
	"/v1/hooks/before_planning",
	"/v1/hooks/after_planning",
	"/v1/hooks/after_execution",
	"/v1/hooks/after_synthesis",
	"/v1/operations/check",
}

// fuzzBodies is one of each request body type, for decodeBody on its own.
func fuzzBodies() []any {
	return []any{&api.BeforePlanningRequest{}, &api.AfterPlanningRequest{}, &api.AfterExecutionRequest{}, &api.AfterSynthesisRequest{}, &api.OperationCheckRequest{}}
}

// allowed5xx are the server errors the API documents: a stage that cannot reach its
// state store or has no live generation (503), a hook that broke its contract (500).
var allowed5xx = map[int][]api.ErrorType{
	http.StatusServiceUnavailable:  {api.TypeStoreUnavailable, api.TypeNotReady},
	http.StatusInternalServerError: {api.TypeHookContract},
}

// FuzzAPIBodies sends arbitrary bodies to every stage of an in-process Service running
// the stock-agent example: decodeBody must refuse bad bodies with a typed 4xx, and no
// body may panic or produce an undocumented 5xx or an untyped error.
func FuzzAPIBodies(f *testing.F) {
	plan := `{"plan_id":"p1","steps":[{"step_id":"step-1","agent_name":"stock-service","namespace":"demo-tools","instruction":"quote","metadata":{"capability":"stock_quote","parameters":{"symbol":"ACME"}}}]}`
	for _, seed := range []struct {
		route uint8
		body  string
	}{
		{0, `{"request_id":"r","request":"What is ACME?","metadata":{"tenant":"acme"},"cache_vary":{"locale":"en"}}`},
		{0, `{"request_id":"r","request":"x","cache_read_disabled":true}`},
		{0, `{"request_id":5,"request":"x"}`},
		{0, `{"request_id":"r","request":"x","metadata":{"n":1e400}}`},
		{0, "{\"request_id\":\"r\",\"request\":\"caf\xe9\"}"},
		{0, `{"request_id":"r","request":"x","metadata":` + strings.Repeat(`{"a":`, 64) + `1` + strings.Repeat(`}`, 64) + `}`},
		{1, `{"request_id":"r","plan":` + plan + `}`},
		{1, `{"request_id":"r2","request":"buy","phase":2,"plan":{"plan_id":"p2","steps":[{"step_id":"step-1","agent_name":"stock-service","namespace":"demo-tools","instruction":"buy","metadata":{"capability":"execute_trade","parameters":{"amount":5}}}]}}`},
		{1, `{"request_id":"r3","plan":{"steps":[{"step_id":"a","agent_name":"ghost","namespace":"x","depends_on":["b"]}]}}`},
		{1, `{"request_id":"r","phase":123456789012345678901234567890,"plan":{}}`},
		{2, `{"request_id":"r","result":{"plan_id":"p1","success":true,"steps":[{"step_id":"step-1","success":true,"response":{"price":42}}]}}`},
		{2, `{"request_id":"r","result":{"steps":"no"}}`},
		{3, `{"request_id":"r","response":"mail jane@example.com or call 555-123-4567"}`},
		{3, `{"request_id":"r","response":null}`},
		{4, `{"operation":"tool_call","call":{"request_id":"r","step_id":"s","agent_name":"stock-service","namespace":"demo-tools","capability":"execute_trade","parameters":{"amount":20000}}}`},
		{4, `{"operation":"inference","call":{"request_id":"r","model":"m","phase":-1}}`},
		{4, `{"operation":"turn","call":{"request_id":"r","request":"hi","metadata":{"a":[1,{"b":null}]}}}`},
		{0, ``},
		{1, `[]`},
		{2, `null`},
	} {
		f.Add(seed.route, []byte(seed.body))
	}
	gen, err := config.Load(filepath.Join("..", "examples", "stock-agent"), config.Options{})
	if err != nil {
		f.Fatal(err)
	}
	registry := reload.NewRegistry(1)
	registry.Swap(gen)
	mem := store.NewMemory(store.MemoryOptions{MaxEntries: 1000, Retention: store.Retention{Success: time.Second, Error: time.Second}})
	svc, err := newService(hostConfig{Registry: registry, States: mem, Records: mem})
	if err != nil {
		f.Fatal(err)
	}
	const limit = 64 << 10
	h := svc.Handler(HTTPOptions{MaxBody: limit})
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		for _, v := range fuzzBodies() {
			if e := decodeBody(bytes.NewReader(body), limit, v); e != nil && (e.Status < 400 || e.Status > 499 || e.Type == "" || e.Message == "") {
				t.Fatalf("decodeBody(%T) = %d %q %q", v, e.Status, e.Type, e.Message)
			}
		}
		path := fuzzRoutes[int(route)%len(fuzzRoutes)]
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, newRequest(http.MethodPost, path, bytes.NewReader(body)))
		var answer struct {
			Error *struct {
				Type    api.ErrorType `json:"type"`
				Message string        `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &answer); err != nil {
			t.Fatalf("%s answered %d with non-JSON %q", path, rec.Code, rec.Body)
		}
		if rec.Code/100 == 2 {
			return
		}
		if rec.Code != http.StatusForbidden && (answer.Error == nil || answer.Error.Type == "" || answer.Error.Message == "") {
			t.Fatalf("%s answered %d without a typed error: %s", path, rec.Code, rec.Body)
		}
		if rec.Code >= 500 {
			for _, typ := range allowed5xx[rec.Code] {
				if answer.Error.Type == typ {
					return
				}
			}
			t.Fatalf("%s answered undocumented %d %s for body %q", path, rec.Code, rec.Body, body)
		}
	})
}

// FuzzFastBodies_AgreeWithEncodingJSON holds the jsonread fast paths of the
// after_planning and operation check bodies to their contract (a text one takes is
// one encoding/json decodes, strictly, to the same value), and the fast response to
// writeJSON's Encoder, on the plan decoded.
func FuzzFastBodies_AgreeWithEncodingJSON(f *testing.F) {
	f.Add([]byte(`{"operation":"tool_call","call":{"operation":"tool_call","request_id":"r","step_id":"s","namespace":"n","agent_name":"a","capability":"c","parameters":{"amount":5,"to":["x"]},"phase":1}}`))
	f.Add([]byte(`{"operation":"inference","call":{"request_id":"r","model":"m","metadata":null,"request":"hi"}}`))
	f.Add([]byte(`{"request_id":"r","phase":2,"request":"buy","metadata":{"tenant":"acme","n":[1,null]},"plan":{"plan_id":"p","steps":[{"step_id":"s","metadata":{"capability":"c"}}]}}`))
	f.Add([]byte(`{"request_id":null,"plan":null,"request":null,"metadata":{}}`))
	f.Add([]byte(`{"request_id":"<a&b>","plan":{"plan_id":"\u2028","created_at":"2025-01-02T03:04:05+01:00"}}`))
	f.Add([]byte(`{"Request_ID":"r","plan":{}}`))
	f.Add([]byte(`{"request_id":"r","plan":{}}}`))
	f.Fuzz(func(t *testing.T, text []byte) {
		var check api.OperationCheckRequest
		sameAsDecoder(t, text, &check)
		var fast api.AfterPlanningRequest
		if !sameAsDecoder(t, text, &fast) {
			return
		}
		if _, err := json.Marshal(fast.Plan); err != nil {
			return // a plan no encoder writes (a year past 9999)
		}
		sameAsEncoder(t, &api.AfterPlanningResponse{DecisionID: fast.RequestID, RequestID: fast.RequestID, Plan: fast.Plan,
			Invocations: []engine.Invocation{{HookName: fast.RequestID, Sequence: fast.Phase, Error: fast.RequestID}}})
	})
}

// sameAsDecoder reports whether fast's readJSON takes text, failing unless a text it
// takes is one encoding/json decodes, strictly, into a T equal to *fast.
func sameAsDecoder[T any, P interface {
	*T
	fastBody
}](t *testing.T, text []byte, fast P) bool {
	t.Helper()
	if !fast.ReadJSON(text) {
		return false
	}
	var slow T
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&slow); err != nil {
		t.Fatalf("encoding/json refuses what the fast path took: %v: %q", err, text)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		t.Fatalf("the fast path took a text that goes on after its value: %q", text)
	}
	if !reflect.DeepEqual(*fast, slow) {
		t.Fatalf("%q: fast path %+v, encoding/json %+v", text, *fast, slow)
	}
	return true
}
