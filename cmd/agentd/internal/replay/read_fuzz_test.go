package replay_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/cmd/agentd/internal/replay"
	"github.com/agentd-dev/agentd/decisionlog"
	"github.com/agentd-dev/agentd/engine"
)

// FuzzRead: whatever a records or decision-log file holds, Read answers a set or an
// error, never panics, answers the same twice, and every decision and skip it reads
// names the request it belongs to.
func FuzzRead(f *testing.F) {
	records, err := json.Marshal([]*engine.ExecutionRecord{tradeRecord("big", 8000), tradeRecord("small", 3000)})
	if err != nil {
		f.Fatal(err)
	}
	event, err := json.Marshal(&decisionlog.Event{SchemaVersion: 1, Kind: "stage", DecisionID: "d1", RequestID: "r",
		Stage: engine.StageAfterPlanning, Outcome: "accepted",
		Input: map[string]any{"plan": map[string]any{"plan_id": "p", "steps": []any{map[string]any{"step_id": "step-1"}}}}})
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		string(records), string(event), string(event) + "\n" + string(event),
		`{"records":[{"request_id":"r","status":"failed"}],"next_cursor":"x"}`,
		`[{"request_id":"r","pipeline_hooks":[],"schema_version":99}]`,
		`{"kind":"check","decision_id":"d","request_id":"r","operation":"tool_call"}`,
		`[[]]`, `null`, `{}`, `"x"`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, input string) {
		set, err := replay.Read(strings.NewReader(input))
		again, errAgain := replay.Read(strings.NewReader(input))
		if (err == nil) != (errAgain == nil) || !reflect.DeepEqual(set, again) {
			t.Fatalf("two reads differ: %+v, %v and %+v, %v", set, err, again, errAgain)
		}
		if err != nil {
			return
		}
		for _, d := range set.Decisions {
			if d.RequestID == "" {
				t.Errorf("a decision without a request id: %+v", d)
			}
		}
	})
}
