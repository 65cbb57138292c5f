package builtin_test

import (
	"slices"
	"testing"

	"github.com/agentd-dev/agentd/builtin"
	"github.com/agentd-dev/agentd/engine"
)

// TestKeepsResponse holds the flag true for exactly the after_synthesis actions that
// leave the response alone, and shows each of them doing so: a gateway streams content
// as it arrives only when every after_synthesis step keeps the response.
func TestKeepsResponse(t *testing.T) {
	keepers := map[string]string{
		"cache.store": "{key: request}",
		"log":         `{message: "'done'"}`,
		"effect":      "{id: audit}",
	}
	var got []string
	for _, name := range builtin.Names() {
		if spec, _ := builtin.Lookup(name); spec.KeepsResponse {
			got = append(got, name)
			if !spec.AllowedIn(engine.StageAfterSynthesis) {
				t.Errorf("%s keeps the response but cannot run in after_synthesis", name)
			}
		}
	}
	want := []string{"cache.store", "effect", "log"}
	if !slices.Equal(got, want) {
		t.Fatalf("actions that keep the response: %v, want %v (decide for a new after_synthesis action)", got, want)
	}
	const response = "Write to ir@acme.example or call 415-555-0100."
	for name, params := range keepers {
		gen := loadHooks(t, hooks(`hooks:
  - name: keeper
    stage: after_synthesis
    steps:
      - `+name+`: `+params+`
`))
		if out, _ := runSynthesis(t, gen, requestCtx(gen, "req-keep", noGate), "q", nil, response); out != response {
			t.Errorf("%s changed the response to %q", name, out)
		}
	}
}
