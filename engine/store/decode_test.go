package store

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/jsonread"
)

// viaEncodingJSON is what DecodeState must give: the stores' decoding before the fast path.
func viaEncodingJSON(rest, runs []byte) (*engine.RequestState, error) {
	var st engine.RequestState
	if err := json.Unmarshal(rest, &st); err != nil {
		return nil, err
	}
	if len(runs) > 0 {
		if err := json.Unmarshal(runs, &st.Runs); err != nil {
			return nil, err
		}
	}
	return &st, nil
}

// sameAsEncodingJSON fails unless DecodeState gives encoding/json's state and error.
func sameAsEncodingJSON(t *testing.T, rest, runs []byte) {
	t.Helper()
	got, err := DecodeState(rest, runs)
	want, werr := viaEncodingJSON(rest, runs)
	if (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() || !reflect.DeepEqual(got, want) {
		t.Fatalf("%s | %s:\nDecodeState   %#v, %v\nencoding/json %#v, %v", rest, runs, got, err, want, werr)
	}
}

// fast reports whether the texts are on the fast path.
func fast(rest, runs []byte) bool {
	var st engine.RequestState
	r := jsonread.New(rest)
	if !engine.ReadState(r, &st) || !r.End() {
		return false
	}
	r = jsonread.New(runs)
	return len(runs) == 0 || engine.ReadRuns(r, &st.Runs) && r.End()
}

// fullState sets every field, and every field of the structs it holds, to a value of
// its own (JSON-shaped, so that it decodes to itself): a reader that drops a field or
// reads it into another decodes something else.
func fullState() *engine.RequestState {
	return &engine.RequestState{
		ID: "req-1", Generation: "gen-1", Request: "Quote ACME <&>",
		Metadata:    map[string]any{"tenant": "t1", "n": 1.5},
		Enrichments: map[string]any{"user": map[string]any{"tier": "gold", "ids": []any{1.0, "x", true, nil, []any{}}}},
		CacheVary:   map[string]string{"region": "eu", "é": "\u2028"}, CacheReadDisabled: true, PhasesIndependent: true,
		InvalidPlanFails: true, Lifecycle: engine.LifecycleOpen, OpenedAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
		PriorSteps: []engine.RoutingStep{{StepID: "s1", AgentName: "stock-service", Namespace: "demo-tools", Instruction: "quote",
			DependsOn: []string{"s0"}, ImplicitDeps: []string{"s00"}, Metadata: map[string]any{"capability": "stock_quote"}}},
		Phase: 2, PhasePlanID: "plan-2", PhaseHash: "abc", PhaseStart: 3,
		Runs: map[string]*engine.StepRun{"s1": {Status: engine.RunFailed, Retryable: true, Attempts: 4,
			Response: map[string]any{"price": 12.5}, Labels: []string{"pii"}}, "s2": nil},
		Labels: []string{"finance"}, History: []engine.HistoryStep{{StepID: "s1", Namespace: "demo-tools",
			AgentName: "stock-service", Capability: "stock_quote", Status: "failed", Labels: []string{"pii"}}},
		Reported: 5, PhaseFlows: []engine.PhaseFlow{{Start: 6, Reported: 7, Labels: []string{"fin"}}},
		Held: []string{"s3"}, HoldOf: "req-0", Revision: 8, TraceParent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
	}
}

// everyFieldSet fails when a field of v, or of a struct v holds, is zero.
func everyFieldSet(t *testing.T, path string, v reflect.Value) {
	t.Helper()
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			everyFieldSet(t, path, v.Elem())
		}
	case reflect.Slice:
		for i := range v.Len() {
			everyFieldSet(t, path, v.Index(i))
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			everyFieldSet(t, path, it.Value())
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			return
		}
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if v.Field(i).IsZero() {
				t.Fatalf("%s.%s is not set", path, f.Name)
			}
			everyFieldSet(t, path+"."+f.Name, v.Field(i))
		}
	}
}

// A stored state decodes to itself on the fast path: with every field set, and with
// each field alone set (so a field read into another is caught too).
func TestDecodeState_EveryField(t *testing.T) {
	full := fullState()
	everyFieldSet(t, "RequestState", reflect.ValueOf(full))
	states := []*engine.RequestState{full, {}}
	for i := range reflect.TypeFor[engine.RequestState]().NumField() {
		one := new(engine.RequestState)
		reflect.ValueOf(one).Elem().Field(i).Set(reflect.ValueOf(full).Elem().Field(i))
		states = append(states, one)
	}
	for _, st := range states {
		rest, runs, err := EncodeState(st)
		if err != nil {
			t.Fatal(err)
		}
		whole, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		for _, texts := range [][2][]byte{{rest, runs}, {whole, nil}} {
			if !fast(texts[0], texts[1]) {
				t.Fatalf("left the fast path: %s | %s", texts[0], texts[1])
			}
			got, err := DecodeState(texts[0], texts[1])
			if err != nil || !reflect.DeepEqual(got, st) {
				t.Fatalf("%s | %s decodes to\n%#v, %v; want\n%#v", texts[0], texts[1], got, err, st)
			}
			sameAsEncodingJSON(t, texts[0], texts[1])
		}
	}
}

// variants are texts near a stored state's: each member of rest set to null, given
// twice, spelled in capitals, left out, and an unknown member added.
func variants(t testing.TB, rest []byte) [][]byte {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(rest, &members); err != nil {
		t.Fatal(err)
	}
	out := [][]byte{bytes.Replace(rest, []byte("{"), []byte(`{"unknown":[1],`), 1)}
	for name, value := range members {
		out = append(out,
			bytes.Replace(rest, []byte(`"`+name+`":`+string(value)), []byte(`"`+name+`":null`), 1),
			bytes.Replace(rest, []byte("{"), []byte(`{"`+name+`":`+string(value)+`,`), 1),
			bytes.Replace(rest, []byte(`"`+name+`":`), []byte(`"`+strings.ToUpper(name)+`":`), 1),
			bytes.Replace(rest, []byte(`"`+name+`":`+string(value)+`,`), nil, 1))
	}
	return out
}

// Texts on both sides of the fast path's border decode as encoding/json decodes them.
func TestDecodeState_AgreesWithEncodingJSON(t *testing.T) {
	rest, runs, err := EncodeState(fullState())
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range variants(t, rest) {
		sameAsEncodingJSON(t, v, runs)
	}
	for _, c := range []struct {
		rest, runs string
		fast       bool
	}{
		{`{"runs":{"a":{"attempts":1}}}`, `{"b":{"attempts":2},"a":{}}`, true}, // runs in both: merged
		{`{"runs":{"a":{"attempts":1}}}`, `null`, true},
		{`{}`, `{"a":null,"b":{"response":null,"labels":null}}`, true},
		{`{}`, `{"a":{"attempts":1},"a":{"status":"started"}}`, true},
		{`{"cache_vary":{"a":"1","a":"2"},"metadata":{"k":1,"k":[]}}`, ``, true},
		{`{"prior_steps":[],"history":[],"phase_flows":[],"labels":[],"held":[],"runs":{}}`, ``, true},
		{`{"opened_at":null,"revision":null,"history":null}`, ``, true},
		{`{"revision":-9223372036854775808}`, ``, true},
		{`{"revision":9223372036854775808}`, ``, false},
		{`{"phase":1e2}`, ``, false},
		{`{"cache_vary":{"a":null}}`, ``, false},
		{`{"prior_steps":[null]}`, ``, false},
		{`{"history":[{"step_id":"s","Status":"x"}]}`, ``, false},
		{`{}`, `{"a":{"Attempts":1}}`, false},
		{`{}`, `{"a":{"attempts":1,"extra":true}}`, false},
		{`{}`, `{"a":{"attempts":"1"}}`, false},
		{`{}`, `[]`, false},
		{`{}`, `{} x`, false},
		{`{"phase":"2"}`, ``, false},
		{`null`, ``, false},
		{`[]`, ``, false},
		{``, ``, false},
		{`{"id":"r"}{}`, ``, false},
	} {
		if got := fast([]byte(c.rest), []byte(c.runs)); got != c.fast {
			t.Errorf("%s | %s: fast path %v, want %v", c.rest, c.runs, got, c.fast)
		}
		sameAsEncodingJSON(t, []byte(c.rest), []byte(c.runs))
	}
}

// FuzzDecodeState_AgreesWithEncodingJSON holds DecodeState to encoding/json's state and
// error on texts near stored states, and on runs alone.
func FuzzDecodeState_AgreesWithEncodingJSON(f *testing.F) {
	for _, st := range []*engine.RequestState{fullState(), {}} {
		rest, runs, err := EncodeState(st)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(rest, runs)
		for _, v := range variants(f, rest) {
			f.Add(v, runs)
		}
	}
	f.Add([]byte(`{"runs":{"a":{"attempts":1}}}`), []byte(`{"b":null}`))
	f.Fuzz(func(t *testing.T, rest, runs []byte) {
		sameAsEncodingJSON(t, rest, runs)
		sameAsEncodingJSON(t, []byte("{}"), runs)
	})
}

// BenchmarkDecodeState decodes fullState as the stores keep it, with DecodeState and
// with encoding/json.
func BenchmarkDecodeState(b *testing.B) {
	rest, runs, err := EncodeState(fullState())
	if err != nil {
		b.Fatal(err)
	}
	for name, decode := range map[string]func(rest, runs []byte) (*engine.RequestState, error){
		"fast": DecodeState, "encoding_json": viaEncodingJSON,
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := decode(rest, runs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
