// Package load is the benchmark's HTTP load generator: a fixed number of POST requests
// from a fixed number of workers over keep-alive connections, after a warm-up, with
// every response checked. It measures throughput and latency percentiles.
package load

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Target is what the workers call.
type Target struct {
	URL string
	// Body appends the body of request seq (0-based, unique within a run) to dst.
	Body func(dst []byte, seq int) []byte
	// Want is a byte string every 200 response body must contain.
	Want []byte
}

// Options bound a run.
type Options struct {
	Concurrency int
	Requests    int
	// Warmup requests run, unmeasured, before the measured ones.
	Warmup int
	// Deadline bounds the whole run, warm-up included.
	Deadline time.Duration
	// SeqBase offsets the seq passed to Target.Body, so that request ids stay unique
	// across runs against one server.
	SeqBase int
	// KeepGoing counts failed requests in Result.Failures instead of failing the run.
	KeepGoing bool
	// BeforeMeasure, when set, is called after the warm-up, just before the measured
	// requests start.
	BeforeMeasure func()
}

// Result is one measured run.
type Result struct {
	Requests   int
	Elapsed    time.Duration
	Throughput float64 // requests per second
	P50, P99   time.Duration
	Max        time.Duration
	// Failures counts the failed requests of a KeepGoing run; FirstFailure is one of
	// them. Latencies and throughput count successful requests only.
	Failures     int
	FirstFailure error
}

func (r Result) String() string {
	return fmt.Sprintf("%d requests in %v: %.0f req/s, p50 %v, p99 %v, max %v",
		r.Requests, r.Elapsed.Round(time.Millisecond), r.Throughput, r.P50, r.P99, r.Max)
}

// Run sends opts.Warmup and then opts.Requests requests to t with opts.Concurrency
// workers sharing one keep-alive connection pool of that size. Any transport error,
// non-200 status or response without t.Want fails the run.
func Run(ctx context.Context, t Target, opts Options) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, opts.Deadline)
	defer cancel()
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        opts.Concurrency,
		MaxIdleConnsPerHost: opts.Concurrency,
		MaxConnsPerHost:     opts.Concurrency,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	if opts.Warmup > 0 {
		if _, _, err := phase(ctx, client, t, opts, opts.SeqBase, opts.Warmup); err != nil {
			return Result{}, fmt.Errorf("warm-up: %w", err)
		}
	}
	if opts.BeforeMeasure != nil {
		opts.BeforeMeasure()
	}
	start := time.Now()
	lat, failures, err := phase(ctx, client, t, opts, opts.SeqBase+opts.Warmup, opts.Requests)
	elapsed := time.Since(start)
	if err != nil {
		return Result{}, err
	}
	if len(lat) == 0 {
		return Result{}, fmt.Errorf("every request failed: %w", failures.first)
	}
	slices.Sort(lat)
	return Result{
		Failures:     int(failures.n.Load()),
		FirstFailure: failures.first,
		Requests:     len(lat),
		Elapsed:      elapsed,
		Throughput:   float64(len(lat)) / elapsed.Seconds(),
		P50:          percentile(lat, 50),
		P99:          percentile(lat, 99),
		Max:          lat[len(lat)-1],
	}, nil
}

// percentile returns the nearest-rank p-th percentile of sorted.
func percentile(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p + 99) / 100
	return sorted[min(max(i-1, 0), len(sorted)-1)]
}

// failures counts the failed requests of a KeepGoing phase.
type failures struct {
	n     atomic.Int64
	once  sync.Once
	first error
}

// phase sends n requests, seq base … base+n-1, and returns the latencies of the
// successful ones.
func phase(ctx context.Context, client *http.Client, t Target, opts Options, base, n int) ([]time.Duration, *failures, error) {
	workers := opts.Concurrency
	fails := &failures{}
	var next atomic.Int64
	lats := make([][]time.Duration, workers)
	errs := make([]error, workers)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			lat := make([]time.Duration, 0, n/workers+1)
			var body []byte
			var resp bytes.Buffer
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					break
				}
				body = t.Body(body[:0], base+i)
				began := time.Now()
				if err := call(ctx, client, t, body, &resp); err != nil && opts.KeepGoing && ctx.Err() == nil {
					fails.n.Add(1)
					fails.once.Do(func() { fails.first = fmt.Errorf("request %d: %w", base+i, err) })
					continue
				} else if err != nil {
					errs[w] = fmt.Errorf("request %d: %w", base+i, err)
					cancel()
					break
				}
				lat = append(lat, time.Since(began))
			}
			lats[w] = lat
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fails, firstLine(err)
	}
	return slices.Concat(lats...), fails, nil
}

// call posts body and checks the response.
func call(ctx context.Context, client *http.Client, t Target, body []byte, resp *bytes.Buffer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	resp.Reset()
	if _, err := resp.ReadFrom(io.LimitReader(res.Body, 4<<20)); err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d: %.300s", res.StatusCode, resp.Bytes())
	}
	if !bytes.Contains(resp.Bytes(), t.Want) {
		return fmt.Errorf("response lacks %q: %.300s", t.Want, resp.Bytes())
	}
	return nil
}

// firstLine keeps the first of several joined worker errors (the others are usually
// the cancellation it caused) and says how many there were.
func firstLine(err error) error {
	var joined interface{ Unwrap() []error }
	if errors.As(err, &joined) {
		all := joined.Unwrap()
		for _, e := range all {
			if !errors.Is(e, context.Canceled) {
				if len(all) > 1 {
					return fmt.Errorf("%w (and %s more worker errors)", e, strconv.Itoa(len(all)-1))
				}
				return e
			}
		}
		return all[0]
	}
	return err
}
