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

func TestInterleavedSendsEveryBodyToEach(t *testing.T) {
	var mu sync.Mutex
	var order []string
	server := func(name string) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			mu.Lock()
			order = append(order, name+string(b))
			mu.Unlock()
			io.WriteString(w, `{"ok":true}`)
		}))
	}
	a, b, c := server("a"), server("b"), server("c")
	defer a.Close()
	defer b.Close()
	defer c.Close()
	body := func(dst []byte, seq int) []byte { return strconv.AppendInt(dst, int64(seq), 10) }
	var targets []Target
	for _, s := range []*httptest.Server{a, b, c} {
		targets = append(targets, Target{URL: s.URL, Body: body, Want: []byte("ok")})
	}
	rs, err := Interleaved(context.Background(), targets, Options{Requests: 4, Warmup: 2, SeqBase: 10, Deadline: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	want := "a10 b10 c10 b11 c11 a11 c12 a12 b12 a13 b13 c13 b14 c14 a14 c15 a15 b15"
	if got := strings.Join(order, " "); got != want {
		t.Errorf("requests %s\nwant     %s", got, want)
	}
	for i, r := range rs {
		if r.Requests != 4 || r.P99 < r.P50 || r.Max < r.P99 {
			t.Errorf("result %d: %v", i, r)
		}
	}
}

func TestInterleavedFailsOnAWrongAnswer(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer ok.Close()
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusBadGateway) }))
	defer bad.Close()
	body := func(dst []byte, _ int) []byte { return dst }
	_, err := Interleaved(context.Background(), []Target{{URL: ok.URL, Body: body, Want: []byte("ok")}, {URL: bad.URL, Body: body, Want: []byte("ok")}},
		Options{Requests: 3, Deadline: 5 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "status 502") {
		t.Fatalf("err = %v, want a status 502 failure", err)
	}
}
