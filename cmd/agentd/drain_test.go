package main

import (
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"
)

// TestServe_SIGTERMDrainsInFlightCalls sends SIGTERM while a stage call waits on a slow
// retrieval: the call still completes and the daemon then exits 0.
func TestServe_SIGTERMDrainsInFlightCalls(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	kb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		close(arrived)
		<-release
		_, _ = w.Write([]byte("slow context"))
	}))
	defer kb.Close()
	dir := t.TempDir()
	writeFile(t, dir, "hooks/slow.yaml", "apiVersion: agentd.dev/v1\nkind: HookSet\nmetadata: {name: slow}\nhooks:\n  - name: slow-retrieval\n    stage: before_planning\n    steps:\n      - http.retrieve: {url: \""+kb.URL+"\", key: rag_context, timeout: 20s}\n")
	d := startDaemon(t, dir, "--allow-no-plan-review") // a config of before_planning alone
	type answer struct {
		status int
		body   string
	}
	done := make(chan answer, 1)
	go func() {
		status, body := d.do(t, "POST", "/v1/hooks/before_planning", `{"request_id":"slow","request":"q"}`)
		done <- answer{status, body}
	}()
	<-arrived
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // let the daemon start draining before the call can finish
	close(release)
	a := <-done
	if a.status != http.StatusOK {
		t.Fatalf("in-flight call answered %d %s", a.status, a.body)
	}
	select {
	case <-d.exited:
		if d.exitErr != nil {
			t.Fatalf("agentd exited with %v\n%s", d.exitErr, d.stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("agentd did not exit after draining")
	}
}
