package expr

import (
	"context"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/engine/op"
)

// history reads as the list of maps it was built as before historyStep read steps in
// place: every expression gives over history what it gives over that list (given as
// metadata.h), the same value or an error alike.
func TestHistory_ReadsAsMaps(t *testing.T) {
	c := newCompiler(t, 1<<40) // metadata.h is assumed as large as any map
	flow := &op.Flow{History: []op.HistoryStep{
		{StepID: "s1", Namespace: "ns", AgentName: "a", Capability: "read_secret", Status: "succeeded", Labels: []string{"secret"}},
		{StepID: "s2", AgentName: "b", Capability: "fetch_url", Status: "failed"},
	}}
	maps := []any{
		map[string]any{"step_id": "s1", "namespace": "ns", "agent_name": "a", "capability": "read_secret", "status": "succeeded", "labels": []any{"secret"}},
		map[string]any{"step_id": "s2", "namespace": "", "agent_name": "b", "capability": "fetch_url", "status": "failed", "labels": []any{}},
	}
	for _, src := range []string{
		`history.exists(h, h.capability == 'read_secret' && 'secret' in h.labels)`,
		`history.all(h, has(h.namespace) && has(h.labels) && has(h.step_id))`,
		`history.exists(h, has(h.nope))`,
		`history[0].nope == 'x'`,
		`dyn(history[0])[1] == 'x'`,
		`history[0]['status'] == 'succeeded' && history[1].status == 'failed'`,
		`'capability' in history[0] && !('nope' in history[0])`,
		`dyn(1) in history[0]`,
		`size(history[0]) == 6 && size(history[1].labels) == 0`,
		`history[1].labels == [] && history[0].labels == ['secret']`,
		`history[1].namespace == ''`,
		`history.map(h, h.step_id) == ['s1', 's2']`,
		`history[0] == history[0] && history[0] != history[1]`,
		`history[0] == {'step_id': 's1', 'namespace': 'ns', 'agent_name': 'a', 'capability': 'read_secret', 'status': 'succeeded', 'labels': ['secret']}`,
		`{'step_id': 's1', 'namespace': 'ns', 'agent_name': 'a', 'capability': 'read_secret', 'status': 'succeeded', 'labels': ['secret']} == history[0]`,
		`history[0].exists(k, k == 'agent_name') && history[0].all(k, k != 'nope')`,
		`history[0].filter(k, k.startsWith('s')).size() == 2`,
		`dyn(history[1]).agent_name == 'b' && type(history[0]) == map`,
		`history[0].labels.exists(l, l == 'secret') && history[0].labels[0] == 'secret'`,
		`history[0].labels[1] == 'x'`,
		`string(history[0].step_id) + history[1].step_id == 's1s2'`,
	} {
		over := func(list string) (bool, error) {
			prg := mustCompile(t, c, Guard, strings.ReplaceAll(src, "history", list), Bool)
			return prg.EvalBool(context.Background(), &Vars{Call: &op.Call{}, Flow: flow, Metadata: map[string]any{"h": maps}})
		}
		got, gotErr := over("history")
		want, wantErr := over("metadata.h")
		if got != want || (gotErr == nil) != (wantErr == nil) {
			t.Errorf("%s: %v, %v over history; %v, %v over the maps", src, got, gotErr, want, wantErr)
		}
	}
}
