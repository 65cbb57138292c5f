package engine_test

import (
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/engine"
)

// FuzzStartFrom: whatever labels a history states (a test case's, or what a server's
// _meta would carry), a state takes them only when every one is a label name and
// they fit the request's bound, and then carries exactly their union, sorted; a
// refusal leaves the state as it was.
func FuzzStartFrom(f *testing.F) {
	for _, seed := range []string{"secret", "secret,untrusted", "Secret", "a b", "", "x,x,y", strings.Repeat("l", 65), "é"} {
		f.Add(seed, "untrusted")
	}
	f.Fuzz(func(t *testing.T, step, extra string) {
		st := &engine.RequestState{ID: "r", Labels: []string{"base"}}
		labels := strings.Split(step, ",")
		err := st.StartFrom([]engine.HistoryStep{{StepID: "s", Capability: "c", Labels: labels}}, []string{extra})
		valid := engine.ValidLabel(extra) == ""
		for _, l := range labels {
			valid = valid && engine.ValidLabel(l) == ""
		}
		if !valid {
			if err == nil {
				t.Fatalf("labels %q and %q taken", labels, extra)
			}
			if len(st.Labels) != 1 || len(st.History) != 0 {
				t.Fatalf("a refusal changed the state: %+v", st)
			}
			return
		}
		if err != nil {
			t.Fatalf("valid labels %q, %q refused: %v", labels, extra, err)
		}
		for i, l := range st.Labels {
			if i > 0 && st.Labels[i-1] >= l {
				t.Fatalf("labels not sorted and unique: %q", st.Labels)
			}
		}
		for _, want := range append(labels, extra, "base") {
			found := false
			for _, l := range st.Labels {
				found = found || l == want
			}
			if !found {
				t.Fatalf("label %q missing from %q", want, st.Labels)
			}
		}
	})
}
