package load

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRunSendsEveryRequestOnce(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen[string(b)]++
		mu.Unlock()
		io.WriteString(w, `{"ok":true}`)
	}))
	defer srv.Close()
	target := Target{URL: srv.URL, Want: []byte(`"ok":true`), Body: func(dst []byte, seq int) []byte {
		return strconv.AppendInt(dst, int64(seq), 10)
	}}
	res, err := Run(context.Background(), target, Options{Concurrency: 4, Requests: 200, Warmup: 20, Deadline: 10 * time.Second, SeqBase: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 200 || len(seen) != 220 {
		t.Fatalf("measured %d requests, server saw %d distinct bodies; want 200 and 220", res.Requests, len(seen))
	}
	for body, n := range seen {
		if n != 1 {
			t.Errorf("body %s sent %d times", body, n)
		}
	}
	if res.P50 <= 0 || res.P99 < res.P50 || res.Max < res.P99 {
		t.Errorf("percentiles out of order: %v", res)
	}
}

func TestRunFailsOnAWrongAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, `{"error":"denied"}`)
	}))
	defer srv.Close()
	target := Target{URL: srv.URL, Want: []byte("x"), Body: func(dst []byte, _ int) []byte { return dst }}
	_, err := Run(context.Background(), target, Options{Concurrency: 2, Requests: 10, Deadline: 5 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "status 403") {
		t.Fatalf("err = %v, want a status 403 failure", err)
	}
}

// Responses of every framing net/http writes are read whole: chunked bodies, and
// connections the server closes after each response, which the next request dials
// again.
func TestRunReadsChunkedAndClosedResponses(t *testing.T) {
	var conns sync.Map
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conns.Store(r.RemoteAddr, true)
		b, _ := io.ReadAll(r.Body)
		if n, _ := strconv.Atoi(string(b)); n%2 == 0 {
			w.Header().Set("Connection", "close")
		}
		io.WriteString(w, strings.Repeat("x", 64<<10)) // past net/http's buffer: chunked
		w.(http.Flusher).Flush()
		io.WriteString(w, `"ok":true`)
	}))
	defer srv.Close()
	target := Target{URL: srv.URL + "/v1/hooks/after_planning", Want: []byte(`"ok":true`), Body: func(dst []byte, seq int) []byte {
		return strconv.AppendInt(dst, int64(seq), 10)
	}}
	res, err := Run(context.Background(), target, Options{Concurrency: 3, Requests: 60, Deadline: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	conns.Range(func(any, any) bool { n++; return true })
	if res.Requests != 60 || n < 30 {
		t.Fatalf("measured %d requests over %d connections; want 60 over at least 30", res.Requests, n)
	}
}

func TestRunFailsPastItsDeadline(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(50 * time.Millisecond)
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	target := Target{URL: srv.URL, Want: []byte("ok"), Body: func(dst []byte, _ int) []byte { return dst }}
	if _, err := Run(context.Background(), target, Options{Concurrency: 2, Requests: 1000, Deadline: 200 * time.Millisecond}); err == nil {
		t.Fatal("a run past its deadline succeeded")
	}
}

// A kept connection the server closed while it was idle is dialled again, not failed.
func TestRunRedialsAnIdleConnectionTheServerClosed(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	srv.Config.IdleTimeout = 20 * time.Millisecond
	srv.Start()
	defer srv.Close()
	target := Target{URL: srv.URL, Want: []byte("ok"), Body: func(dst []byte, _ int) []byte { return dst }}
	opts := Options{Concurrency: 1, Requests: 3, Warmup: 3, Deadline: 10 * time.Second, BeforeMeasure: func() { time.Sleep(100 * time.Millisecond) }}
	if _, err := Run(context.Background(), target, opts); err != nil {
		t.Fatal(err)
	}
}
