package decisionlog

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// A file past its size is rotated: the newest lines are in Path, the older ones in
// Path.1 and Path.2, no file holds more than MaxBytes, and no more than Keep rotated
// files are kept.
func TestFileSink_Rotates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "decisions.log")
	sink, err := NewFileSink(FileOptions{Path: path, MaxBytes: 1000, Keep: 2})
	if err != nil {
		t.Fatal(err)
	}
	mp, read := metrics(t)
	in, _ := newInstruments(mp, nil)
	sink.bind(in)
	for i := range 40 {
		line := fmt.Sprintf(`{"n":%d,"pad":"%0200d"}`, i, 0)
		sink.write(nil, []byte(line))
		if i%7 == 0 {
			sink.flush()
		}
	}
	if err := sink.close(context.Background()); err != nil {
		t.Fatal(err)
	}
	var last int
	for _, name := range []string{path + ".2", path + ".1", path} {
		info, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if info.Size() > 1000 {
			t.Errorf("%s holds %d bytes, over 1000", name, info.Size())
		}
		for _, line := range splitLines(readFile(t, name)) {
			var v struct{ N int }
			if err := json.Unmarshal([]byte(line), &v); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if v.N < last {
				t.Errorf("%s: line %d after %d: rotation out of order", name, v.N, last)
			}
			last = v.N
		}
	}
	if last != 39 {
		t.Errorf("the newest line is %d, want 39", last)
	}
	if _, err := os.Stat(path + ".3"); !os.IsNotExist(err) {
		t.Errorf("a third rotated file exists: %v", err)
	}
	if n := read("agentd.decision_log.events", "sink=file"); n != 40 {
		t.Errorf("file events = %d, want 40", n)
	}
}

// A file that cannot be opened is reported at start; one that fails later counts its
// lost lines and is opened again by the next event.
func TestFileSink_WriteFailuresAreCounted(t *testing.T) {
	if _, err := NewFileSink(FileOptions{Path: filepath.Join(t.TempDir(), "missing", "decisions.log")}); err == nil {
		t.Fatal("a file in a missing directory opened")
	}
	sink, path := tempFileSink(t)
	mp, read := metrics(t)
	in, _ := newInstruments(mp, nil)
	sink.bind(in)
	sink.write(nil, []byte(`{"n":1}`))
	_ = sink.(*fileSink).f.Close() // the disk goes away under the buffered line
	sink.flush()
	if n := read("agentd.decision_log.dropped", "sink=file", "reason=write_failed"); n != 1 {
		t.Fatalf("write_failed = %d, want 1", n)
	}
	sink.write(nil, []byte(`{"n":2}`))
	if err := sink.close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); got != "{\"n\":2}\n" {
		t.Fatalf("file holds %q, want the line written after the failure", got)
	}
}

// flaky answers 503 to its first failures requests, then keeps every batch.
type flaky struct {
	mu       sync.Mutex
	failures int
	calls    int
	batches  [][]json.RawMessage
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.calls <= f.failures {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	var batch []json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&batch); err != nil || r.Header.Get("Authorization") != "Bearer t" {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	f.batches = append(f.batches, batch)
}

func (f *flaky) received() (int, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, b := range f.batches {
		n += len(b)
	}
	return n, len(f.batches)
}

// Batches that fail are sent again after a backoff until they are taken, in order and
// none larger than BatchSize.
func TestHTTPSink_RetriesBatchesInOrder(t *testing.T) {
	endpoint := &flaky{failures: 2}
	srv := httptest.NewServer(endpoint)
	defer srv.Close()
	sink, err := NewHTTPSink(HTTPOptions{URL: srv.URL, Header: http.Header{"Authorization": {"Bearer t"}}, BatchSize: 5,
		Interval: 10 * time.Millisecond, MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	mp, read := metrics(t)
	in, _ := newInstruments(mp, nil)
	sink.bind(in)
	for i := range 12 {
		sink.write(nil, fmt.Appendf(nil, `{"n":%d}`, i))
	}
	deadline := time.Now().Add(10 * time.Second)
	for n, _ := endpoint.received(); n < 12 && time.Now().Before(deadline); n, _ = endpoint.received() {
		time.Sleep(5 * time.Millisecond)
	}
	if err := sink.close(context.Background()); err != nil {
		t.Fatal(err)
	}
	endpoint.mu.Lock()
	defer endpoint.mu.Unlock()
	next := 0
	for _, b := range endpoint.batches {
		if len(b) > 5 {
			t.Errorf("a batch of %d events, over 5", len(b))
		}
		for _, raw := range b {
			var v struct{ N int }
			_ = json.Unmarshal(raw, &v)
			if v.N != next {
				t.Fatalf("event %d where %d was due", v.N, next)
			}
			next++
		}
	}
	if next != 12 || endpoint.calls < 2+len(endpoint.batches) {
		t.Fatalf("%d events in %d calls, want all 12 after the 2 failures", next, endpoint.calls)
	}
	if n := read("agentd.decision_log.events", "sink=http"); n != 12 {
		t.Errorf("http events = %d, want 12", n)
	}
}

// An endpoint nobody answers costs nothing but the events past the buffer (counted),
// and those still buffered at shutdown (counted too).
func TestHTTPSink_UnreachableEndpointDropsAndCounts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	sink, err := NewHTTPSink(HTTPOptions{URL: url, Buffer: 5, BatchSize: 2, Interval: time.Millisecond, MinBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	mp, read := metrics(t)
	in, _ := newInstruments(mp, nil)
	sink.bind(in)
	for i := range 20 {
		sink.write(nil, fmt.Appendf(nil, `{"n":%d}`, i))
	}
	if n := read("agentd.decision_log.dropped", "sink=http", "reason=buffer_full"); n != 15 {
		t.Errorf("buffer_full = %d, want 15", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := sink.close(ctx); err == nil {
		t.Error("close reported no undelivered events")
	}
	if n := read("agentd.decision_log.dropped", "sink=http", "reason=shutdown"); n != 5 {
		t.Errorf("shutdown = %d, want 5", n)
	}
}

// A batch the endpoint refuses for good (a 4xx) is dropped, not retried forever.
func TestHTTPSink_RefusedBatchIsDropped(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusBadRequest) }))
	defer srv.Close()
	sink, err := NewHTTPSink(HTTPOptions{URL: srv.URL, BatchSize: 3, Interval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	mp, read := metrics(t)
	in, _ := newInstruments(mp, nil)
	sink.bind(in)
	for i := range 3 {
		sink.write(nil, fmt.Appendf(nil, `{"n":%d}`, i))
	}
	deadline := time.Now().Add(10 * time.Second)
	for read("agentd.decision_log.dropped", "reason=rejected") < 3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if err := sink.close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := read("agentd.decision_log.dropped", "sink=http", "reason=rejected"); n != 3 {
		t.Errorf("rejected = %d, want 3", n)
	}
	if _, err := NewHTTPSink(HTTPOptions{URL: "ftp://x"}); err == nil {
		t.Error("an ftp URL was accepted")
	}
}

func splitLines(s string) []string {
	var out []string
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\n' {
			i++
		}
		if i > 0 {
			out = append(out, s[:i])
		}
		if i < len(s) {
			i++
		}
		s = s[i:]
	}
	return out
}

// A sink endpoint that redirects, to its own origin or another, gets no batch through
// the redirect: the token and the events never reach the target, and the batch is
// dropped as rejected.
func TestHTTPSink_FollowsNoRedirect(t *testing.T) {
	var reached sync.Map
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Store(r.Header.Get("Authorization"), true)
		w.WriteHeader(http.StatusOK)
	}))
	defer target.Close()
	for _, code := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		srv := httptest.NewServer(http.RedirectHandler(target.URL+"/collect", code))
		sink, err := NewHTTPSink(HTTPOptions{URL: srv.URL, Header: http.Header{"Authorization": {"Bearer secret"}}, BatchSize: 2, Interval: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		mp, read := metrics(t)
		in, _ := newInstruments(mp, nil)
		sink.bind(in)
		sink.write(nil, []byte(`{"n":1}`))
		sink.write(nil, []byte(`{"n":2}`))
		deadline := time.Now().Add(10 * time.Second)
		for read("agentd.decision_log.dropped", "reason=rejected") < 2 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if err := sink.close(context.Background()); err != nil {
			t.Fatal(err)
		}
		srv.Close()
		if n := read("agentd.decision_log.dropped", "sink=http", "reason=rejected"); n != 2 {
			t.Errorf("%d: rejected = %d, want 2", code, n)
		}
	}
	reached.Range(func(k, _ any) bool {
		t.Errorf("the redirect target got a batch (Authorization %q)", k)
		return true
	})
}
