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
