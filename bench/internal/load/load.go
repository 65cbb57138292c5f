// Package load is the benchmark's HTTP load generator: a fixed number of POST requests
// from a fixed number of workers over keep-alive connections, after a warm-up, with
// every response checked. It measures throughput and latency percentiles.
package load

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
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
// workers, each on a keep-alive connection of its own. Any transport error, non-200
// status or response without t.Want fails the run.
//
// The workers speak HTTP/1.1 themselves (a request written in one piece, the response
// read by net/http's parser), as wrk does, rather than through net/http's client, whose
// connection pool and per-connection goroutines cost more CPU per request than the
// cheapest servers measured: the load generator shares the machine with them, and
// should take as little of it as it can.
func Run(ctx context.Context, t Target, opts Options) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, opts.Deadline)
	defer cancel()
	d, err := dialerFor(t.URL)
	if err != nil {
		return Result{}, err
	}
	conns := make([]*conn, opts.Concurrency)
	defer closeAll(conns)
	if opts.Warmup > 0 {
		if _, _, err := phase(ctx, d, conns, t, opts, opts.SeqBase, opts.Warmup); err != nil {
			return Result{}, fmt.Errorf("warm-up: %w", err)
		}
	}
	if opts.BeforeMeasure != nil {
		opts.BeforeMeasure()
	}
	start := time.Now()
	lat, failures, err := phase(ctx, d, conns, t, opts, opts.SeqBase+opts.Warmup, opts.Requests)
	elapsed := time.Since(start)
	if err != nil {
		return Result{}, err
	}
	if len(lat) == 0 {
		return Result{}, fmt.Errorf("every request failed: %w", failures.first)
	}
	r := summarize(lat, elapsed)
	r.Failures, r.FirstFailure = int(failures.n.Load()), failures.first
	return r, nil
}

// percentile returns the nearest-rank p-th percentile (0 < p ≤ 100) of sorted, which
// is not empty.
func percentile(sorted []time.Duration, p float64) time.Duration {
	i := int(math.Ceil(float64(len(sorted))*p/100 - 1e-9)) // the slack absorbs 99.9's rounding
	return sorted[min(max(i-1, 0), len(sorted)-1)]
}

// failures counts the failed requests of a KeepGoing phase.
type failures struct {
	n     atomic.Int64
	once  sync.Once
	first error
}

// phase sends n requests, seq base … base+n-1, worker w on conns[w] (dialled when
// nil or closed), and returns the latencies of the successful ones.
func phase(ctx context.Context, d dialer, conns []*conn, t Target, opts Options, base, n int) ([]time.Duration, *failures, error) {
	workers := len(conns)
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
			var body, req []byte
			var resp bytes.Buffer
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					break
				}
				body = t.Body(body[:0], base+i)
				req = d.request(req[:0], body)
				began := time.Now()
				err := d.call(ctx, &conns[w], req, &resp)
				if err == nil {
					err = t.check(&resp)
				}
				if err != nil && opts.KeepGoing && ctx.Err() == nil {
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
	all := slices.Concat(lats...)
	if err := ctx.Err(); err != nil && len(all)+int(fails.n.Load()) < n {
		return nil, fails, err // the run's deadline passed
	}
	return all, fails, nil
}

// dialer writes requests to one address and connects to it.
type dialer struct {
	addr string
	head string // the request line and headers, up to the Content-Length value
}

// dialerFor returns the dialer of POST requests to target, an http:// URL.
func dialerFor(target string) (dialer, error) {
	u, err := url.Parse(target)
	if err != nil {
		return dialer{}, err
	}
	if u.Scheme != "http" {
		return dialer{}, fmt.Errorf("load: %s: only http:// targets", target)
	}
	return dialer{addr: u.Host, head: "POST " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host +
		"\r\nContent-Type: application/json\r\nContent-Length: "}, nil
}

// request appends a request carrying body to dst.
func (d dialer) request(dst, body []byte) []byte {
	dst = append(dst, d.head...)
	dst = strconv.AppendInt(dst, int64(len(body)), 10)
	dst = append(dst, "\r\n\r\n"...)
	return append(dst, body...)
}

// conn is a worker's keep-alive connection.
type conn struct {
	nc net.Conn
	br *bufio.Reader
}

// closeAll closes the connections a run dialled.
func closeAll(conns []*conn) {
	for _, c := range conns {
		c.close()
	}
}

func (c *conn) close() {
	if c != nil && c.nc != nil {
		c.nc.Close()
		c.nc = nil
	}
}

// call writes req on *cp, dialling first when it has no connection, and reads the
// response: a status other than 200 is an error; the body goes to resp. A connection
// the server closes, or that fails, is dropped: the next call dials again. A kept
// connection the server had closed (timed out while idle) is dialled again at once
// when the request could not have reached it: its write failed, or the connection
// ended before any byte of an answer (a server that reads a request answers it before
// closing). ctx ending interrupts the call.
func (d dialer) call(ctx context.Context, cp **conn, req []byte, resp *bytes.Buffer) error {
	c := *cp
	kept := c != nil && c.nc != nil
	if !kept {
		nc, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "tcp", d.addr)
		if err != nil {
			return err
		}
		c = &conn{nc: nc, br: bufio.NewReaderSize(nc, 16<<10)}
		*cp = c
	}
	nc := c.nc
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Now()) })
	res, unsent, err := c.exchange(req, resp)
	stop()
	if err != nil || res.Close {
		c.close()
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return context.Cause(ctx) // interrupted: the run ended, or another worker failed
	case err != nil && kept && unsent:
		return d.call(ctx, cp, req, resp)
	case err != nil:
		return err
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d: %.300s", res.StatusCode, resp.Bytes())
	}
	return nil
}

// exchange writes req and reads its response, the body into resp. unsent says that a
// failure came before the server could have answered: the write failed, or the
// connection ended before any byte of an answer.
func (c *conn) exchange(req []byte, resp *bytes.Buffer) (res *http.Response, unsent bool, err error) {
	if _, err := c.nc.Write(req); err != nil {
		return nil, true, err
	}
	if _, err := c.br.Peek(1); err != nil {
		return nil, errors.Is(err, io.EOF), err
	}
	if res, err = http.ReadResponse(c.br, nil); err != nil {
		return nil, false, err
	}
	defer res.Body.Close()
	resp.Reset()
	if _, err := resp.ReadFrom(io.LimitReader(res.Body, 4<<20)); err != nil {
		return nil, false, err
	}
	return res, false, nil
}

// check reports whether resp, a 200 response's body, holds t.Want.
func (t Target) check(resp *bytes.Buffer) error {
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
