package load

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"
)

// Interleaved sends opts.Warmup and then opts.Requests rounds of requests one after the
// other over one keep-alive connection per target: request seq to every target in
// turn, the first target rotating every round, so that all see the same moments of a
// shared machine. It returns each target's result, in the order of targets; their
// differences are what one adds to another. Any transport error, non-200 status or
// response without the target's Want fails the run. opts.Concurrency is ignored;
// opts.BeforeMeasure runs after the warm-up.
func Interleaved(ctx context.Context, targets []Target, opts Options) ([]Result, error) {
	ctx, cancel := context.WithTimeout(ctx, opts.Deadline)
	defer cancel()
	dialers := make([]dialer, len(targets))
	conns := make([]*conn, len(targets))
	defer closeAll(conns)
	for n, t := range targets {
		d, err := dialerFor(t.URL)
		if err != nil {
			return nil, err
		}
		dialers[n] = d
	}
	var body, req []byte
	var resp bytes.Buffer
	took := make([][]time.Duration, len(targets))
	start := time.Now()
	for i := range opts.Warmup + opts.Requests {
		if i == opts.Warmup {
			if opts.BeforeMeasure != nil {
				opts.BeforeMeasure()
			}
			start = time.Now()
		}
		seq := opts.SeqBase + i
		for k := range targets {
			n := (i + k) % len(targets)
			t := targets[n]
			body = t.Body(body[:0], seq)
			req = dialers[n].request(req[:0], body)
			began := time.Now()
			err := dialers[n].call(ctx, &conns[n], req, &resp)
			if err == nil {
				err = t.check(&resp)
			}
			if err != nil {
				return nil, fmt.Errorf("request %d to %s: %w", seq, t.URL, err)
			}
			if i >= opts.Warmup {
				took[n] = append(took[n], time.Since(began))
			}
		}
	}
	elapsed := time.Since(start)
	out := make([]Result, len(targets))
	for n, lat := range took {
		out[n] = summarize(lat, elapsed)
	}
	return out, nil
}

func summarize(lat []time.Duration, elapsed time.Duration) Result {
	slices.Sort(lat)
	if len(lat) == 0 {
		return Result{}
	}
	return Result{
		Requests: len(lat), Elapsed: elapsed, Throughput: float64(len(lat)) / elapsed.Seconds(),
		P50: percentile(lat, 50), P99: percentile(lat, 99), Max: lat[len(lat)-1],
	}
}
