package load

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"
)

// Paired sends opts.Warmup and then opts.Requests pairs of requests one after the
// other over one keep-alive connection per target: request seq to a, then to b, the
// order swapping every pair, so that both see the same moments of a shared machine.
// It returns each target's result; their difference is what b adds to a. Any
// transport error, non-200 status or response without the target's Want fails the
// run. opts.Concurrency is ignored; opts.BeforeMeasure runs after the warm-up.
func Paired(ctx context.Context, a, b Target, opts Options) (Result, Result, error) {
	ctx, cancel := context.WithTimeout(ctx, opts.Deadline)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true}}
	defer client.CloseIdleConnections()
	var body []byte
	var resp bytes.Buffer
	timed := func(t Target, seq int) (time.Duration, error) {
		body = t.Body(body[:0], seq)
		began := time.Now()
		if err := call(ctx, client, t, body, &resp); err != nil {
			return 0, fmt.Errorf("request %d to %s: %w", seq, t.URL, err)
		}
		return time.Since(began), nil
	}
	var la, lb []time.Duration
	start := time.Now()
	for i := range opts.Warmup + opts.Requests {
		if i == opts.Warmup {
			if opts.BeforeMeasure != nil {
				opts.BeforeMeasure()
			}
			start = time.Now()
		}
		seq := opts.SeqBase + i
		first, second, into := a, b, [2]*[]time.Duration{&la, &lb}
		if i%2 == 1 {
			first, second, into = b, a, [2]*[]time.Duration{&lb, &la}
		}
		d1, err := timed(first, seq)
		if err != nil {
			return Result{}, Result{}, err
		}
		d2, err := timed(second, seq)
		if err != nil {
			return Result{}, Result{}, err
		}
		if i >= opts.Warmup {
			*into[0], *into[1] = append(*into[0], d1), append(*into[1], d2)
		}
	}
	elapsed := time.Since(start)
	return summarize(la, elapsed), summarize(lb, elapsed), nil
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
