package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The durability tests run agentd on its default store, a bolt file under
// --data-dir (in its default durability mode unless they say otherwise), kill it with SIGKILL and start it again on the same directory: every
// stage call it acknowledged must be in the record the new daemon serves.

// kill sends SIGKILL to d and waits for it to exit.
func (d *daemon) kill(t *testing.T) {
	t.Helper()
	if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-d.exited
}

func TestDurable_SIGKILLUnderLoadLosesNoAcknowledgedRecord(t *testing.T) {
	config, data := copyExample(t, "stock-agent"), t.TempDir()
	victim := startDaemon(t, config, "--data-dir", data)
	var acked acks
	var completed atomic.Int32
	var wg sync.WaitGroup
	deadline := time.Now().Add(20 * time.Second)
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline); i++ {
				id := fmt.Sprintf("kill-%d-%d", w, i)
				for _, st := range lifecycle(id) {
					status, body, err := victim.try(http.MethodPost, "/v1/hooks/"+st[0], st[1])
					if err != nil {
						return // the victim is gone
					}
					if status != 200 {
						t.Errorf("%s %s = %d %s", st[0], id, status, body)
						return
					}
					acked.add(id, st[0])
				}
				completed.Add(1)
			}
		}()
	}
	for completed.Load() < 60 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	victim.kill(t)
	wg.Wait()

	restarted := startDaemon(t, config, "--data-dir", data)
	checked, lost := acked.verify(t, restarted)
	t.Logf("SIGKILL under load: %d requests acknowledged (%d complete lifecycles), %d lost after the restart", checked, completed.Load(), lost)
	if checked == 0 || completed.Load() == 0 {
		t.Fatal("no acknowledged request to check")
	}
	// The restarted daemon lists what it found, and says where it keeps it.
	if status, body := restarted.do(t, "GET", "/v1/executions?status=succeeded&limit=1", ""); status != 200 || !strings.Contains(body, `"request_id":"kill-`) {
		t.Fatalf("listing after the restart = %d %s", status, body)
	}
	var st struct{ Store string }
	if status, body := restarted.do(t, "GET", "/v1/status", ""); status != 200 || json.Unmarshal([]byte(body), &st) != nil || st.Store != "bolt" {
		t.Fatalf("status = %d %s; want store bolt", status, body)
	}
}

// One stage call, then SIGKILL at once: its record is there after the restart, and the
// request goes on from the state it left, in every durability mode (a SIGKILL keeps
// what reached the kernel, fsynced or not).
func TestDurable_OneStageCallSurvivesSIGKILL(t *testing.T) {
	for _, mode := range []string{"always", "interval", "none"} {
		t.Run(mode, func(t *testing.T) {
			config, data := copyExample(t, "stock-agent"), t.TempDir()
			d := startDaemon(t, config, "--data-dir", data, "--data-sync", mode)
			steps := lifecycle("one-call")
			if status, body := d.do(t, "POST", "/v1/hooks/"+steps[0][0], steps[0][1]); status != 200 {
				t.Fatalf("%s = %d %s", steps[0][0], status, body)
			}
			d.kill(t)
			d = startDaemon(t, config, "--data-dir", data, "--data-sync", mode)
			if status, rec := d.record(t, "one-call"); status != 200 || rec.Revision < 1 || len(rec.PipelineHooks) == 0 {
				t.Fatalf("record after SIGKILL and restart = %d %+v", status, rec)
			}
			for _, st := range steps[1:] {
				if status, body := d.do(t, "POST", "/v1/hooks/"+st[0], st[1]); status != 200 {
					t.Fatalf("%s after the restart = %d %s", st[0], status, body)
				}
			}
			if status, rec := d.record(t, "one-call"); status != 200 || rec.Status != "succeeded" || len(rec.Phases) == 0 {
				t.Fatalf("record of the request finished after the restart = %d %+v", status, rec)
			}
		})
	}
}

// A second daemon on a data directory in use refuses to start, naming the file.
func TestDurable_DataDirIsHeldByOneDaemon(t *testing.T) {
	config, data := copyExample(t, "stock-agent"), t.TempDir()
	startDaemon(t, config, "--data-dir", data)
	code, _, stderr := runCLI(t, "serve", "--config", config, "--addr", "127.0.0.1:0", "--data-dir", data)
	if code == 0 || !strings.Contains(stderr, filepath.Join(data, "agentd.db")+" is in use") {
		t.Fatalf("second daemon on the same --data-dir: exit %d, stderr %s", code, stderr)
	}
}
