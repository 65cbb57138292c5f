package load

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// virtualClock is a Clock whose time moves only when a test's sender does work
// (advance) or the scheduler sleeps until a request is due.
type virtualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *virtualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *virtualClock) SleepUntil(_ context.Context, t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.now) {
		c.now = t
	}
}

func (c *virtualClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestDueIsComputedFromTheStart(t *testing.T) {
	start := time.Unix(1000, 0)
	for _, tc := range []struct {
		rate float64
		i    int
		want time.Duration
	}{
		{1000, 0, 0},
		{1000, 7, 7 * time.Millisecond},
		{500, 3, 6 * time.Millisecond},
		{3, 3, time.Second}, // 333.33… ms apart, and no drift after three
		{3, 3000, 1000 * time.Second},
	} {
		if got := Due(start, tc.rate, tc.i).Sub(start); got != tc.want {
			t.Errorf("Due(rate %v, %d) = start+%v, want start+%v", tc.rate, tc.i, got, tc.want)
		}
	}
}

// TestOpenLoop drives one worker on a virtual clock, so that every figure is exact.
func TestOpenLoop(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name    string
		service time.Duration // each request's time on the worker
		want    []time.Duration
		late    int
		// achieved is the completed rate: 5 requests over the time to the last answer
		achieved float64
	}{
		// each request is sent when due and answered 0.4 ms later: the schedule, not
		// the answers, sets the pace
		{"keeps the schedule", 400 * time.Microsecond, []time.Duration{400 * time.Microsecond, 400 * time.Microsecond, 400 * time.Microsecond, 400 * time.Microsecond, 400 * time.Microsecond}, 0, 5 / 0.0044},
		// 5 ms per request at one every ms: request i waits for the worker, and its
		// latency counts from when it was due (5, 9, 13, …), not from when it was
		// sent (5 ms each): coordinated omission corrected
		{"counts from the due time", 5 * ms, []time.Duration{5 * ms, 9 * ms, 13 * ms, 17 * ms, 21 * ms}, 4, 5 / 0.025},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &virtualClock{now: time.Unix(1000, 0)}
			start := clock.Now()
			var sent []time.Duration
			var seqs []int
			send := func(_ context.Context, w, seq int) error {
				if w != 0 {
					t.Errorf("worker %d of 1", w)
				}
				sent = append(sent, clock.Now().Sub(start))
				seqs = append(seqs, seq)
				clock.advance(tc.service)
				return nil
			}
			r, err := OpenLoop(context.Background(), send, OpenOptions{Rate: 1000, Requests: 5, SeqBase: 20, Workers: 1, Deadline: time.Minute, Clock: clock})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := fmtDurations(r.Latencies), fmtDurations(tc.want); got != want {
				t.Errorf("latencies %s, want %s", got, want)
			}
			if r.Late != tc.late || r.Rate != 1000 || r.Achieved != tc.achieved {
				t.Errorf("late %d, rate %v, achieved %v; want %d, 1000, %v", r.Late, r.Rate, r.Achieved, tc.late, tc.achieved)
			}
			if got := fmtInts(seqs); got != "20 21 22 23 24" {
				t.Errorf("seqs %s", got)
			}
			if r.Sustained() != (tc.late == 0) {
				t.Errorf("Sustained() = %v with %d late of 5", r.Sustained(), tc.late)
			}
			if tc.late == 0 {
				if got := fmtDurations(sent); got != "0s 1ms 2ms 3ms 4ms" {
					t.Errorf("sent at %s, want one every ms", got)
				}
			}
		})
	}
}

func TestOpenLoopIdleRunsOutsideTheLatency(t *testing.T) {
	clock := &virtualClock{now: time.Unix(1000, 0)}
	var idle int
	send := func(context.Context, int, int) error { clock.advance(100 * time.Microsecond); return nil }
	r, err := OpenLoop(context.Background(), send, OpenOptions{Rate: 1000, Requests: 3, Workers: 1, Deadline: time.Minute, Clock: clock,
		Idle: func(context.Context, int) error { idle++; clock.advance(200 * time.Microsecond); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if idle != 3 || fmtDurations(r.Latencies) != "100µs 100µs 100µs" {
		t.Errorf("idle ran %d times; latencies %s", idle, fmtDurations(r.Latencies))
	}
}

func TestOpenLoopFails(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name string
		o    OpenOptions
		send Sender
		want string
	}{
		{"no rate", OpenOptions{Requests: 1, Workers: 1}, nil, "needs a rate"},
		{"a failed request", OpenOptions{Rate: 1000, Requests: 5, Workers: 2, Deadline: time.Minute},
			func(_ context.Context, _, seq int) error {
				if seq == 3 {
					return boom
				}
				return nil
			}, "request 3: boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Clock = &virtualClock{now: time.Unix(1000, 0)}
			_, err := OpenLoop(context.Background(), tc.send, tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestQuantileAndMerge(t *testing.T) {
	a := OpenResult{Rate: 1000, Achieved: 990, Late: 1}
	for i := 1; i <= 999; i++ {
		a.Latencies = append(a.Latencies, time.Duration(i))
	}
	b := OpenResult{Rate: 1000, Achieved: 980, Latencies: []time.Duration{1000}}
	m := Merge(a, b)
	if len(m.Latencies) != 1000 || m.Late != 1 || m.Achieved != 980 || m.Rate != 1000 {
		t.Fatalf("merged: %d latencies, late %d, achieved %v, rate %v", len(m.Latencies), m.Late, m.Achieved, m.Rate)
	}
	for q, want := range map[float64]time.Duration{0.5: 500, 0.99: 990, 0.999: 999, 1: 1000} {
		if got := m.Quantile(q); got != want {
			t.Errorf("Quantile(%v) = %v, want %v", q, got, want)
		}
	}
}

// TestTargetSenderOverHTTP runs the open loop on the wall clock against a server,
// asserting what was sent and answered, never how long it took.
func TestTargetSenderOverHTTP(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen[string(b)] = true
		mu.Unlock()
		io.WriteString(w, `{"ok":true}`)
	}))
	defer srv.Close()
	send, closeConns, err := Target{URL: srv.URL, Want: []byte("ok"),
		Body: func(dst []byte, seq int) []byte { return strconv.AppendInt(dst, int64(seq), 10) }}.Sender(4)
	if err != nil {
		t.Fatal(err)
	}
	defer closeConns()
	r, err := OpenLoop(context.Background(), send, OpenOptions{Rate: 2000, Requests: 50, SeqBase: 100, Workers: 4, Deadline: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Latencies) != 50 || len(seen) != 50 || !seen["100"] || !seen["149"] {
		t.Errorf("%d latencies, %d distinct bodies", len(r.Latencies), len(seen))
	}
}

func fmtDurations(ds []time.Duration) string {
	var s []string
	for _, d := range ds {
		s = append(s, d.String())
	}
	return strings.Join(s, " ")
}

func fmtInts(xs []int) string {
	var s []string
	for _, x := range xs {
		s = append(s, strconv.Itoa(x))
	}
	return strings.Join(s, " ")
}
