package openai

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/config/reload"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/store"
)

// exampleGeneration loads the openai-gateway example's config with its gateway in
// front of upstream (a base URL) and gateways.openai's other settings replaced by
// settings (YAML lines, besides the example's tools); with upstream "" the config has
// no gateway at all.
func exampleGeneration(t testing.TB, upstream, settings string) *config.Generation {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "config")
	if out, err := exec.Command("cp", "-rL", "../../examples/openai-gateway", dir).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	gateway := ""
	if upstream != "" {
		gateway = "gateways:\n  openai:\n    upstream: " + upstream + "\n"
		for _, l := range strings.Split(strings.TrimSpace(settings), "\n") {
			if l = strings.TrimSpace(l); l != "" {
				gateway += "    " + l + "\n"
			}
		}
		gateway += "    tools:\n" +
			"      get_quote: {namespace: demo-tools, agent: stock-service, capability: stock_quote}\n" +
			"      place_trade: {namespace: demo-tools, agent: stock-service, capability: execute_trade}\n"
	}
	// A generous rego_timeout keeps a loaded machine (or -race) from turning reviews
	// into fail-closed timeouts.
	doc := "apiVersion: agentd.dev/v1\nkind: HookSet\nmetadata: {name: gateway-openai}\nsettings: {rego_timeout: 10s}\n" + gateway
	if err := os.WriteFile(filepath.Join(dir, "hooks", "40-gateway.yaml"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	gen, err := config.Load(dir, config.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return gen
}

// newTestGateway serves gen (nil: no generation is live) on a memory store.
func newTestGateway(t testing.TB, gen *config.Generation, maxBody int64) *Gateway {
	t.Helper()
	registry := reload.NewRegistry(1)
	if gen != nil {
		registry.Swap(gen)
	}
	mem := store.NewMemory(store.MemoryOptions{})
	driver, err := engine.NewDriver(engine.DriverConfig{Generations: registry, States: mem, Records: mem})
	if err != nil {
		t.Fatal(err)
	}
	return New(Config{Registry: registry, Driver: driver, MaxBody: maxBody})
}
