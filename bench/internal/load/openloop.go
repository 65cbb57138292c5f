package load

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"
)

// Clock is the time an open-loop run schedules and measures by. Tests inject a virtual
// one; nil in OpenOptions means the wall clock.
type Clock interface {
	Now() time.Time
	// SleepUntil returns at t or later, or when ctx ends.
	SleepUntil(ctx context.Context, t time.Time)
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

func (wallClock) SleepUntil(ctx context.Context, t time.Time) {
	d := time.Until(t)
	if d <= 0 {
		return
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
}

// Sender makes request seq on worker (0 ≤ worker < OpenOptions.Workers) and returns when
// its answer is in and checked. A worker makes one request at a time, so its state (a
// connection, a session) needs no lock.
type Sender func(ctx context.Context, worker, seq int) error

// OpenOptions bound an open-loop run.
type OpenOptions struct {
	// Rate is the scheduled rate, requests per second: request i is due at
	// start + i/Rate, whatever became of the requests before it.
	Rate float64
	// Requests are scheduled, numbered SeqBase … SeqBase+Requests-1.
	Requests, SeqBase int
	// Workers bound the requests in flight. A request due while every worker is busy
	// starts late, and its latency still counts from when it was due.
	Workers int
	// Deadline bounds the run.
	Deadline time.Duration
	// Idle, when set, runs after a worker's request is measured and before the worker
	// takes another (for example to open a new session), outside every latency.
	Idle  func(ctx context.Context, worker int) error
	Clock Clock
}

// lateBy is how far behind its schedule a request may start and still count as sent on
// time (OpenResult.Late).
const lateBy = time.Millisecond

// OpenResult is one open-loop run, or several merged (Merge).
type OpenResult struct {
	// Latencies holds every request's latency, from the time it was due (not the time
	// it was sent: this corrects for coordinated omission) until its answer, sorted.
	Latencies []time.Duration
	// Rate is the scheduled rate; Achieved the rate requests completed at, Requests
	// over the time from the first request's due time to the last answer.
	Rate, Achieved float64
	// Late counts the requests that started more than lateBy after they were due.
	Late int
}

// Sustained reports whether the run kept its schedule: it completed at no less than
// 95% of the scheduled rate and at most 1% of its requests started late.
func (r OpenResult) Sustained() bool {
	return r.Achieved >= 0.95*r.Rate && r.Late*100 <= len(r.Latencies)
}

// Quantile returns the nearest-rank q-th quantile (0 < q ≤ 1) of the latencies; 0
// when there are none.
func (r OpenResult) Quantile(q float64) time.Duration {
	if len(r.Latencies) == 0 {
		return 0
	}
	return percentile(r.Latencies, 100*q)
}

func (r OpenResult) String() string {
	return fmt.Sprintf("%d requests at %.0f/s scheduled, %.0f/s achieved, %d late: p50 %v, p99 %v, p99.9 %v, max %v",
		len(r.Latencies), r.Rate, r.Achieved, r.Late, r.Quantile(0.5), r.Quantile(0.99), r.Quantile(0.999), r.Quantile(1))
}

// Merge pools runs at one scheduled rate: every latency, the late requests, and the
// lowest achieved rate of any of them.
func Merge(rs ...OpenResult) OpenResult {
	var out OpenResult
	for i, r := range rs {
		out.Latencies = append(out.Latencies, r.Latencies...)
		out.Late += r.Late
		out.Rate = r.Rate
		if i == 0 || r.Achieved < out.Achieved {
			out.Achieved = r.Achieved
		}
	}
	slices.Sort(out.Latencies)
	return out
}

// Due returns when request i of a run started at start with the given rate is due.
// Each due time is computed from the start, so rounding never accumulates.
func Due(start time.Time, rate float64, i int) time.Time {
	return start.Add(time.Duration(math.Round(float64(i) * float64(time.Second) / rate)))
}

// OpenLoop sends o.Requests requests at the fixed rate o.Rate, each when it is due, on
// at most o.Workers at a time, and measures each from its due time: a slow answer
// does not postpone the requests after it (an open loop, as a population of users
// sends), so a stall shows in the latency of every request it delayed. A failed
// request fails the run.
func OpenLoop(ctx context.Context, send Sender, o OpenOptions) (OpenResult, error) {
	if o.Rate <= 0 || o.Workers <= 0 || o.Requests <= 0 {
		return OpenResult{}, fmt.Errorf("load: open loop needs a rate, workers and requests (%+v)", o)
	}
	clock := o.Clock
	if clock == nil {
		clock = wallClock{}
	}
	ctx, cancel := context.WithTimeout(ctx, o.Deadline)
	defer cancel()
	free := make(chan int, o.Workers)
	for w := range o.Workers {
		free <- w
	}
	lat := make([]time.Duration, o.Requests)
	var (
		mu       sync.Mutex
		late     int
		lastDone time.Time
		errs     []error
		wg       sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
		cancel()
	}
	start := clock.Now()
	for i := range o.Requests {
		var w int
		select {
		case w = <-free:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		due := Due(start, o.Rate, i)
		clock.SleepUntil(ctx, due)
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			began := clock.Now()
			err := send(ctx, w, o.SeqBase+i)
			done := clock.Now()
			if err != nil {
				fail(fmt.Errorf("request %d: %w", o.SeqBase+i, err))
				return
			}
			lat[i] = done.Sub(due)
			mu.Lock()
			if began.Sub(due) > lateBy {
				late++
			}
			if done.After(lastDone) {
				lastDone = done
			}
			mu.Unlock()
			if o.Idle != nil {
				if err := o.Idle(ctx, w); err != nil {
					fail(fmt.Errorf("worker %d: %w", w, err))
					return
				}
			}
			free <- w
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return OpenResult{}, firstLine(errors.Join(errs...))
	}
	if err := ctx.Err(); err != nil {
		return OpenResult{}, fmt.Errorf("load: open loop at %.0f/s: %w", o.Rate, err)
	}
	slices.Sort(lat)
	return OpenResult{Latencies: lat, Rate: o.Rate, Achieved: float64(o.Requests) / lastDone.Sub(start).Seconds(), Late: late}, nil
}

// Sender returns a Sender posting t's bodies, each worker on a keep-alive connection of
// its own (as Run's workers), and close, which closes them. Every answer is checked as
// Run checks it.
func (t Target) Sender(workers int) (send Sender, close func(), err error) {
	d, err := dialerFor(t.URL)
	if err != nil {
		return nil, nil, err
	}
	type state struct {
		body, req []byte
		resp      bytes.Buffer
	}
	conns := make([]*conn, workers)
	states := make([]state, workers)
	send = func(ctx context.Context, w, seq int) error {
		s := &states[w]
		s.body = t.Body(s.body[:0], seq)
		s.req = d.request(s.req[:0], s.body)
		if err := d.call(ctx, &conns[w], s.req, &s.resp); err != nil {
			return err
		}
		return t.check(&s.resp)
	}
	return send, func() { closeAll(conns) }, nil
}
