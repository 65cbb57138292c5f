package decisionlog

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/compare"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
)

// agree fails unless the encoder and encoding/json agree on e: the same bytes, or both
// an error.
func agree(t *testing.T, enc *encoder, e *Event) {
	t.Helper()
	want, wantErr := json.Marshal(e)
	got, err := enc.encode(e)
	switch {
	case (err != nil) != (wantErr != nil):
		t.Fatalf("encoder error %v, encoding/json error %v", err, wantErr)
	case err == nil && !bytes.Equal(got, want):
		t.Fatalf("encoder:\n %s\nencoding/json:\n %s", got, want)
	}
}

// fill sets every exported field reachable from v to a value of r that encodes (a
// random zero or not, so omitempty members come and go), so that a field added to
// Event, or to what it holds, is encoded by the test before any event carries it.
func fill(r *rand.Rand, v reflect.Value, depth int) {
	if r.IntN(4) == 0 || depth > 4 {
		return // zero
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(text(r))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(r.Int64N(1<<40) - 1<<39)
	case reflect.Float64:
		v.SetFloat(number(r))
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(r, v.Elem(), depth+1)
	case reflect.Slice:
		n := r.IntN(3)
		v.Set(reflect.MakeSlice(v.Type(), n, n))
		for i := range n {
			fill(r, v.Index(i), depth+1)
		}
	case reflect.Map:
		switch m := v.Addr().Interface().(type) {
		case *map[string]any:
			*m = object(r, depth)
		case *map[string]string:
			*m = map[string]string{text(r): text(r)}
		}
	case reflect.Interface:
		if x := value(r, depth); x != nil {
			v.Set(reflect.ValueOf(x))
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Unix(r.Int64N(1<<34), r.Int64N(1e9)).In(time.FixedZone("z", 3600*(r.IntN(25)-12)))))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(r, v.Field(i), depth+1)
			}
		}
	}
}

// text is a string with what JSON strings escape: quotes, backslashes, control and
// HTML characters, U+2028, U+2029, invalid UTF-8, other non-ASCII.
func text(r *rand.Rand) string {
	parts := []string{"a", "Z9", `"`, `\`, "\n\t\r\b\f", "\x00\x1f", "<>&", "\u2028\u2029", "\xff", "\xe2\x80", "é", "日本", "\x7f", " "}
	var b bytes.Buffer
	for range r.IntN(6) {
		b.WriteString(parts[r.IntN(len(parts))])
	}
	return b.String()
}

func number(r *rand.Rand) float64 {
	return []float64{0, -1.5, 1e-7, 123456789, 1e21, 1e20, -2.5e-9, math.Copysign(0, -1), 0.1, 1e300, 5e-324}[r.IntN(11)]
}

func value(r *rand.Rand, depth int) any {
	if depth > 4 {
		return nil
	}
	switch r.IntN(10) {
	case 0:
		return nil
	case 1:
		return text(r)
	case 2:
		return number(r)
	case 3:
		return r.IntN(2) == 0
	case 4:
		return r.IntN(1000)
	case 5:
		return object(r, depth+1)
	case 6:
		list := make([]any, r.IntN(3))
		for i := range list {
			list[i] = value(r, depth+1)
		}
		return list
	case 7:
		return []string{text(r), text(r)}
	case 8:
		return plan(r)
	default:
		return map[string]string{text(r): text(r)}
	}
}

func object(r *rand.Rand, depth int) map[string]any {
	m := map[string]any{}
	for range r.IntN(4) {
		m[text(r)] = value(r, depth+1)
	}
	return m
}

func plan(r *rand.Rand) *engine.RoutingPlan {
	p := &engine.RoutingPlan{}
	fill(r, reflect.ValueOf(p).Elem(), 1)
	return p
}

// Every event the encoder writes is byte for byte encoding/json's: events with every
// field set or not, payloads of JSON-shaped values, plans, steps and results.
func TestEncoder_AgreesWithEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	enc := &encoder{}
	for range 3000 {
		var e Event
		fill(r, reflect.ValueOf(&e).Elem(), 0)
		p := plan(r)
		result := &engine.ExecutionResult{}
		fill(r, reflect.ValueOf(result).Elem(), 1)
		call := op.Call{}
		fill(r, reflect.ValueOf(&call).Elem(), 1)
		e.setPayload(map[string]any{"request": text(r), "metadata": object(r, 1), "plan": p, "accepted_plan": p,
			"prior_steps": p.Steps, "result": result, "call": call, "shadow": compare.Verdict{Outcome: engine.OutcomeAccepted}})
		agree(t, enc, &e)
	}
}

// Values encoding/json refuses are refused: the event is dropped, not written wrong.
func TestEncoder_RefusesWhatEncodingJSONRefuses(t *testing.T) {
	enc := &encoder{}
	for name, e := range map[string]*Event{
		"NaN duration":     {DurationMS: math.NaN()},
		"infinite payload": {Input: map[string]any{"x": []any{math.Inf(1)}}},
		"year 10000":       {Timestamp: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		"channel":          {Input: map[string]any{"x": make(chan int)}},
		"plan time":        {Input: map[string]any{"plan": &engine.RoutingPlan{CreatedAt: time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)}}},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := enc.encode(e); err == nil {
				t.Fatal("encoded")
			}
			agree(t, enc, e)
		})
	}
}

func mustEncode(t *testing.T, e *Event) []byte {
	t.Helper()
	data, err := (&encoder{}).encode(e)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// An accepted plan that is the incoming plan is written twice, the same.
func TestEncoder_AcceptedPlanThatIsTheIncomingPlan(t *testing.T) {
	r := stageReport("r", "g")
	e := new(Event)
	stageEvent(e, r)
	e.setPayload(stagePayload(nil, r))
	var got struct {
		Input  struct{ Plan json.RawMessage }
		Output struct {
			AcceptedPlan json.RawMessage `json:"accepted_plan"`
		}
	}
	if err := json.Unmarshal(mustEncode(t, e), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Input.Plan) == 0 || !bytes.Equal(got.Input.Plan, got.Output.AcceptedPlan) {
		t.Fatalf("plan %s, accepted plan %s", got.Input.Plan, got.Output.AcceptedPlan)
	}
}
