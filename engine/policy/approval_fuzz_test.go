package policy

import (
	"encoding/json"
	"testing"
)

// FuzzPlanDecision_RequireApproval: whatever a plan policy's decision document holds
// under require_approval, decoding it neither panics nor yields an entry without a
// step id or a code; a decoded list is sorted by step id.
func FuzzPlanDecision_RequireApproval(f *testing.F) {
	for _, seed := range []string{
		`[{"step_id": "step-1", "code": "big_trade", "reason": "above 10000"}]`,
		`[{"step_id": "step-2", "code": "c"}, {"step_id": "step-1", "code": "c"}]`,
		`"step-1"`, `[["step-1"]]`, `[{"step_id": "", "code": "c"}]`, `[{"code": "c"}]`,
		`[{"step_id": "s", "code": 1}]`, `null`, `{}`, `[{"step_id": "s", "code": "c", "reason": null}]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var raw any
		if json.Unmarshal(data, &raw) != nil {
			return
		}
		d, err := decodePlanDecision(map[string]any{"deny": []any{}, "require_approval": raw})
		if err != nil {
			return
		}
		for i, a := range d.RequireApproval {
			if a.StepID == "" || a.Code == "" {
				t.Fatalf("entry %d = %+v: a step id and a code are required", i, a)
			}
			if i > 0 && d.RequireApproval[i-1].StepID > a.StepID {
				t.Fatalf("entries not sorted by step id: %+v", d.RequireApproval)
			}
		}
	})
}
