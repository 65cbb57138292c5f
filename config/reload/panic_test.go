package reload_test

import (
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/config/reload"
)

// TestReload_PanicKeepsTheLiveGeneration: a compile that panics (a bug on some input)
// fails that reload like a config error; the live generation keeps serving, and the
// next good reload goes live.
func TestReload_PanicKeepsTheLiveGeneration(t *testing.T) {
	dir := stockAgent(t, "")
	r, reg := newReloader(t, dir)
	live := reg.Current()
	reload.SetLoad(r, func(string, config.Options) (*config.Generation, error) { panic("compiler bug") })
	if _, err := r.Reload(t.Context()); err == nil || !strings.Contains(err.Error(), "compiler bug") {
		t.Fatalf("reload error = %v, want the panic as an error", err)
	}
	if reg.Current() != live || !strings.Contains(reg.Status().Error, "compiler bug") {
		t.Fatalf("after the panic: generation %v (want the live one), status error %q", reg.Current().ID, reg.Status().Error)
	}
	reload.SetLoad(r, config.Load)
	if _, err := r.Reload(t.Context()); err != nil || reg.Status().Error != "" {
		t.Fatalf("good reload after the panic: %v, status error %q", err, reg.Status().Error)
	}
}
