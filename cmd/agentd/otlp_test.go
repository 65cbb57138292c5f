package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
)

// TestServe_ExportsTracesByOTLP points the standard OTEL_EXPORTER_OTLP_ENDPOINT at a
// loopback collector stand-in and checks that the hook spans arrive there.
func TestServe_ExportsTracesByOTLP(t *testing.T) {
	var mu sync.Mutex
	var received bytes.Buffer
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		if r.URL.Path == "/v1/traces" {
			received.Write(body)
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	d := startDaemonEnv(t, []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + collector.URL,
		"OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		"OTEL_BSP_SCHEDULE_DELAY=50",
	}, filepath.Join(repoRoot(t), "examples", "stock-agent"))
	if code, body := d.do(t, "POST", "/v1/hooks/before_planning", `{"request_id":"traced","request":"q","metadata":{"tenant":"acme"}}`); code != 200 {
		t.Fatalf("before_planning = %d %s", code, body)
	}
	d.stop(t) // shutdown flushes the batch exporter
	mu.Lock()
	defer mu.Unlock()
	for _, want := range []string{"pipeline.hook.before_planning.tenant-context", "pipeline.hook.failure_policy", "agentd"} {
		if !bytes.Contains(received.Bytes(), []byte(want)) {
			t.Errorf("exported traces lack %q (%d bytes received)", want, received.Len())
		}
	}
}
