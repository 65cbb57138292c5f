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

func TestPairedSendsEveryBodyToBoth(t *testing.T) {
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
	a, b := server("a"), server("b")
	defer a.Close()
	defer b.Close()
	body := func(dst []byte, seq int) []byte { return strconv.AppendInt(dst, int64(seq), 10) }
	ra, rb, err := Paired(context.Background(), Target{URL: a.URL, Body: body, Want: []byte("ok")}, Target{URL: b.URL, Body: body, Want: []byte("ok")},
		Options{Requests: 6, Warmup: 2, SeqBase: 10, Deadline: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	want := "a10 b10 b11 a11 a12 b12 b13 a13 a14 b14 b15 a15 a16 b16 b17 a17"
	if got := strings.Join(order, " "); got != want {
		t.Errorf("requests %s\nwant     %s", got, want)
	}
	if ra.Requests != 6 || rb.Requests != 6 || ra.P99 < ra.P50 || rb.Max < rb.P99 {
		t.Errorf("results %v / %v", ra, rb)
	}
}

func TestPairedFailsOnAWrongAnswer(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer ok.Close()
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusBadGateway) }))
	defer bad.Close()
	body := func(dst []byte, _ int) []byte { return dst }
	_, _, err := Paired(context.Background(), Target{URL: ok.URL, Body: body, Want: []byte("ok")}, Target{URL: bad.URL, Body: body, Want: []byte("ok")},
		Options{Requests: 3, Deadline: 5 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "status 502") {
		t.Fatalf("err = %v, want a status 502 failure", err)
	}
}
