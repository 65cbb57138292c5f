package engine_test

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/internal/wiretest"
)

// sameAsMarshal fails unless AppendJSON and encoding/json.Marshal agree on v, and
// AppendJSONUnescapedHTML and an Encoder with SetEscapeHTML(false): the same bytes
// (after what dst held), or both an error that leaves dst as it was. A string is also
// written by AppendJSONString and AppendJSONStringUnescapedHTML.
func sameAsMarshal(t *testing.T, v any) {
	t.Helper()
	want, wantErr := json.Marshal(v)
	agree(t, "AppendJSON", engine.AppendJSON, v, want, wantErr)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	wantErr = enc.Encode(v)
	agree(t, "AppendJSONUnescapedHTML", engine.AppendJSONUnescapedHTML, v, bytes.TrimSuffix(b.Bytes(), []byte("\n")), wantErr)
	if s, ok := v.(string); ok {
		asString := func(f func([]byte, string) []byte) func([]byte, any) ([]byte, error) {
			return func(dst []byte, _ any) ([]byte, error) { return f(dst, s), nil }
		}
		agree(t, "AppendJSONString", asString(engine.AppendJSONString), v, want, nil)
		agree(t, "AppendJSONStringUnescapedHTML", asString(engine.AppendJSONStringUnescapedHTML), v, bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil)
	}
}

func agree(t *testing.T, name string, appendJSON func([]byte, any) ([]byte, error), v any, want []byte, wantErr error) {
	t.Helper()
	dst := []byte("prefix")
	got, err := appendJSON(dst, v)
	switch {
	case (err != nil) != (wantErr != nil):
		t.Fatalf("%s error %v, encoding/json error %v (value %#v)", name, err, wantErr, v)
	case err != nil && string(got) != "prefix":
		t.Fatalf("a refused value changed dst: %q", got)
	case err == nil && !bytes.Equal(got, append([]byte("prefix"), want...)):
		t.Fatalf("%s:\n %s\nencoding/json:\n prefix%s", name, got, want)
	}
}

// AppendJSON writes what encoding/json writes for JSON-shaped values and wire types.
func TestAppendJSON_AgreesWithEncodingJSON(t *testing.T) {
	r := wiretest.Rand(7)
	for range 2000 {
		sameAsMarshal(t, wiretest.Value(r, 4))
		p := wiretest.Plan(r)
		sameAsMarshal(t, p)
		sameAsMarshal(t, p.Steps)
		sameAsMarshal(t, wiretest.Result(r))
		sameAsMarshal(t, map[string]any{"plan": p, "at": wiretest.Time(r), "call": wiretest.Call(r)})
		sameAsMarshal(t, wiretest.Invocations(r))
	}
	for _, v := range []any{(*engine.RoutingPlan)(nil), []engine.RoutingStep(nil), (*engine.ExecutionResult)(nil), []engine.Invocation(nil), []any(nil),
		map[string]any(nil), []string(nil), 1e21, 1e-7, math.Copysign(0, -1), 5e-324, math.MaxFloat64, int64(math.MinInt64), struct{ A int }{1}} {
		sameAsMarshal(t, v)
	}
}

// An invocation with every field set, and a plan, encode as encoding/json encodes
// them: a field added to Invocation or DecisionRecord that the fast path does not
// write fails here.
// Every byte, at every place of the 8-byte words strings are scanned in and in the
// bytes after them, is written as encoding/json writes it, alone and in a multi-byte
// character; so are characters that change length or need escaping, in runs.
func TestAppendJSON_StringsByteByByte(t *testing.T) {
	for b := range 256 {
		for at := range 19 {
			s := []byte(strings.Repeat("a", 19))
			s[at] = byte(b)
			sameAsMarshal(t, string(s))
			sameAsMarshal(t, map[string]any{string(s): string(s[:at+1])})
		}
	}
	for _, s := range []string{"\u2028 in a word\u2029", "<>&<>&<>&<>&", "\"\"\"\"\"\"\"\"\"", "é漢字🙂 and more text",
		"\xff\xfe bad UTF-8 \xc3", "tab\tnewline\n\x00\x1f\x7f", strings.Repeat("x", 64) + "<"} {
		sameAsMarshal(t, s)
	}
}

func TestAppendJSON_EveryFieldSet(t *testing.T) {
	sameAsMarshal(t, []engine.Invocation{*wiretest.Filled(&engine.Invocation{})})
	sameAsMarshal(t, wiretest.Filled(&engine.RoutingPlan{}))
	rec, st := wiretest.Filled(&engine.ExecutionRecord{}), wiretest.Filled(&engine.RequestState{})
	for _, v := range []any{rec, st, st.Runs, &engine.ExecutionRecord{}, &engine.RequestState{},
		(*engine.ExecutionRecord)(nil), (*engine.RequestState)(nil), map[string]*engine.StepRun(nil), map[string]*engine.StepRun{"s": nil}} {
		sameAsMarshal(t, v)
	}
	want, err := json.Marshal(rec.Operations[0])
	if err != nil {
		t.Fatal(err)
	}
	if got, err := engine.AppendJSON(nil, engine.ViewOf(&rec.Operations[0])); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("AppendJSON(ViewOf(operation)) = %s, %v; encoding/json: %s", got, err, want)
	}
}

// Values encoding/json refuses are refused.
func TestAppendJSON_RefusesWhatEncodingJSONRefuses(t *testing.T) {
	for name, v := range map[string]any{
		"NaN":          math.NaN(),
		"infinity":     []any{math.Inf(-1)},
		"year 10000":   time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		"plan year -1": &engine.RoutingPlan{CreatedAt: time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)},
		"channel":      map[string]any{"c": make(chan int)},
		"zone +24h":    time.Date(2020, 1, 1, 0, 0, 0, 0, time.FixedZone("", 24*3600)),
		"zone -123h":   []any{time.Date(2020, 1, 1, 0, 0, 0, 0, time.FixedZone("", -123*3600))},
		"a cycle":      cyclic(),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := engine.AppendJSON(nil, v); err == nil {
				t.Fatal("encoded")
			}
			sameAsMarshal(t, v)
		})
	}
}

// FuzzAppendJSON_AgreesWithEncodingJSON puts arbitrary strings and numbers everywhere
// AppendJSON has a fast path: strings (quotes, control and HTML characters, U+2028,
// invalid UTF-8), map keys, floats, a plan's members.
func FuzzAppendJSON_AgreesWithEncodingJSON(f *testing.F) {
	f.Add("a\u2028<b>\xff\x00\"\\", 1e-7, int64(5))
	f.Add("", math.MaxFloat64, int64(-1))
	f.Fuzz(func(t *testing.T, s string, x float64, n int64) {
		sameAsMarshal(t, map[string]any{s: []any{s, x, n, map[string]any{s: s}, []string{s}}})
		sameAsMarshal(t, &engine.RoutingPlan{PlanID: s, Steps: []engine.RoutingStep{{StepID: s, DependsOn: []string{s},
			Metadata: map[string]any{s: x, "n": n}}}})
		sameAsMarshal(t, []engine.Invocation{{HookName: s, Phase: engine.Stage(s), Status: engine.InvocationStatus(s), Sequence: int(n),
			PlanPhase: int(n), Duration: time.Duration(n), Error: s, Decision: &engine.DecisionRecord{Reason: engine.Reason(s), Cause: engine.Cause(s)},
			DecisionID: s, Mode: engine.RuleMode(s), TraceID: s, SpanID: s, WouldDeny: []engine.Finding{{Rule: s}}}})
		at := time.Unix(0, n)
		sameAsMarshal(t, &engine.ExecutionRecord{RequestID: s, Request: s, Metadata: map[string]any{s: x}, Status: engine.RecordStatus(s),
			OpenUntil: &at, Error: s, Operations: []engine.OperationRecord{{StepID: s, Code: s}}, FinalResponse: s, Revision: n, CreatedAt: at})
		sameAsMarshal(t, &engine.RequestState{ID: s, Request: s, CacheVary: map[string]string{s: s, "k": s}, Labels: []string{s},
			Runs: map[string]*engine.StepRun{s: {Attempts: int(n)}, "b": nil}, Phase: int(n), HoldOf: s, OpenedAt: at})
	})
}

// cyclic is a map that contains itself, through a list.
func cyclic() map[string]any {
	m := map[string]any{}
	m["self"] = []any{m}
	return m
}

// Nesting deeper than AppendJSON goes itself is encoded as encoding/json encodes it.
func TestAppendJSON_DeepValues(t *testing.T) {
	var v any = "leaf"
	for i := range 3000 {
		if i%2 == 0 {
			v = []any{v}
		} else {
			v = map[string]any{"k": v}
		}
	}
	sameAsMarshal(t, v)
	sameAsMarshal(t, time.Date(2020, 1, 1, 0, 0, 0, 0, time.FixedZone("", 23*3600+59*60)))
}
