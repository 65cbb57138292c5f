package decisionlog

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"time"
)

// HTTPOptions configure NewHTTPSink. Zero fields take the defaults.
type HTTPOptions struct {
	// URL takes batches: each a POST of a JSON array of events.
	URL    string
	Header http.Header
	// BatchSize is the most events one POST carries (default 100); Buffer how many
	// events wait at most (default 10,000): past it, new events are dropped.
	BatchSize, Buffer int
	// Interval is how long a partial batch waits before it is sent (default 1s);
	// Timeout bounds one POST (default 5s).
	Interval, Timeout time.Duration
	// MinBackoff and MaxBackoff bound the wait between attempts at a batch that failed
	// (defaults 100ms and 30s): it doubles from the first to the second, with jitter.
	MinBackoff, MaxBackoff time.Duration
	Client                 *http.Client
}

func (o *HTTPOptions) withDefaults() {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	dur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.BatchSize, 100)
	def(&o.Buffer, 10_000)
	dur(&o.Interval, time.Second)
	dur(&o.Timeout, 5*time.Second)
	dur(&o.MinBackoff, 100*time.Millisecond)
	dur(&o.MaxBackoff, 30*time.Second)
	if o.Client == nil {
		// No redirect is followed: it would take the bearer token, and the events,
		// elsewhere than the configured URL. A 3xx is a batch the endpoint refused.
		o.Client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
}

// NewHTTPSink sends events in batches from a goroutine of its own. A batch that fails
// (no answer, a 5xx, 408 or 429) is sent again after a growing backoff, for as long as
// it takes; meanwhile new events wait in the bounded buffer, and those that do not fit
// are dropped (buffer_full). A batch the endpoint refuses with another 4xx, or
// redirects (3xx: no redirect is followed, since it would carry the events and the
// token elsewhere), is dropped (rejected). Nothing it does ever waits on a decision or makes one wait.
func NewHTTPSink(opts HTTPOptions) (Sink, error) {
	opts.withDefaults()
	req, err := http.NewRequest(http.MethodPost, opts.URL, nil)
	if err != nil || req.URL.Host == "" || (req.URL.Scheme != "http" && req.URL.Scheme != "https") {
		return nil, fmt.Errorf("decision log URL %q: want an http(s) URL with a host", opts.URL)
	}
	return newHTTPSink(opts, nil), nil
}

// newHTTPSink returns an HTTP sink of opts (with their defaults) that sends each event
// as f encodes it; a nil f sends the events' JSON lines as they are.
func newHTTPSink(opts HTTPOptions, f *opaFormat) *httpSink {
	return &httpSink{opts: opts, opa: f, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

type httpSink struct {
	opts HTTPOptions
	// opa, when set, encodes each event in OPA's shape and the batches are gzipped.
	opa  *opaFormat
	in   *instruments
	mu   sync.Mutex
	buf  [][]byte
	wake chan struct{}
	stop chan struct{}
	done chan struct{}
	// zip is the sender's (run, then close): reused for every batch.
	zip *gzip.Writer
}

func (s *httpSink) name() string {
	if s.opa != nil {
		return "opa-http"
	}
	return "http"
}

func (s *httpSink) wants() wants { return wants{payload: true, line: s.opa == nil} }
func (s *httpSink) flush()       {}

func (s *httpSink) bind(in *instruments) {
	s.in = in
	go s.run()
}

func (s *httpSink) write(e *Event, line []byte) {
	s.mu.Lock()
	if len(s.buf) >= s.opts.Buffer {
		s.mu.Unlock()
		s.in.drop(s.name(), DropBufferFull, 1)
		return
	}
	s.mu.Unlock()
	if s.opa != nil { // the worker is the only writer: the buffer cannot fill meanwhile
		var err error
		if line, err = s.opa.encode(e); err != nil {
			s.in.drop(s.name(), DropEncode, 1)
			return
		}
	}
	s.mu.Lock()
	s.buf = append(s.buf, slices.Clone(line))
	full := len(s.buf) >= s.opts.BatchSize
	s.mu.Unlock()
	if full {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// run sends batches until close: a full batch at once, a partial one every Interval.
func (s *httpSink) run() {
	defer close(s.done)
	tick := time.NewTicker(s.opts.Interval)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-s.wake:
		case <-tick.C:
		}
		for s.sendNext(context.Background()) {
		}
	}
}

// sendNext sends the oldest batch until it is delivered or refused; false when there
// is none, or when the sink is closing.
func (s *httpSink) sendNext(ctx context.Context) bool {
	batch := s.peek()
	if len(batch) == 0 {
		return false
	}
	for attempt := 0; ; attempt++ {
		status, err := s.post(ctx, batch)
		switch {
		case err == nil && status/100 == 2:
			s.take(len(batch))
			s.in.wrote(s.name(), len(batch))
			return true
		case err == nil && (status/100 == 3 || status/100 == 4 && status != http.StatusRequestTimeout && status != http.StatusTooManyRequests):
			s.take(len(batch))
			s.in.drop(s.name(), DropRejected, len(batch))
			s.in.warn(s.name(), fmt.Errorf("%s answered %d to a batch of %d events", s.opts.URL, status, len(batch)))
			return true
		case attempt == 0:
			if err == nil {
				err = fmt.Errorf("%s answered %d", s.opts.URL, status)
			}
			s.in.warn(s.name(), err)
		}
		select {
		case <-time.After(s.backoff(attempt)):
		case <-s.stop:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// backoff is the wait after the attempt-th failure: MinBackoff doubled attempt
// times, at most MaxBackoff, with up to a fifth of it as jitter.
func (s *httpSink) backoff(attempt int) time.Duration {
	d := s.opts.MaxBackoff
	if attempt < 32 {
		d = min(s.opts.MinBackoff<<attempt, s.opts.MaxBackoff)
	}
	return d - time.Duration(rand.Int64N(int64(d/5)+1))
}

func (s *httpSink) peek() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := min(len(s.buf), s.opts.BatchSize)
	return s.buf[:n:n]
}

func (s *httpSink) take(n int) {
	s.mu.Lock()
	s.buf = s.buf[n:]
	s.mu.Unlock()
}

func (s *httpSink) post(ctx context.Context, batch [][]byte) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.opts.URL, bytes.NewReader(s.encodeBatch(batch)))
	if err != nil {
		return 0, err
	}
	for k, v := range s.opts.Header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	if s.opa != nil {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := s.opts.Client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return resp.StatusCode, nil
}

// encodeBatch returns the body of a POST of batch, a JSON array of its events (gzipped
// for OPA), in a buffer of its own: the client may read it after Do returned.
func (s *httpSink) encodeBatch(batch [][]byte) []byte {
	size := 2
	for _, line := range batch {
		size += len(line) + 1
	}
	if s.opa != nil {
		size /= 4
	}
	body := bytes.NewBuffer(make([]byte, 0, size))
	var w io.Writer = body
	if s.opa != nil {
		if s.zip == nil {
			s.zip = gzip.NewWriter(body)
		} else {
			s.zip.Reset(body)
		}
		w = s.zip
	}
	_, _ = w.Write([]byte{'['}) // writes to a bytes.Buffer, through gzip or not, do not fail
	for i, line := range batch {
		if i > 0 {
			_, _ = w.Write([]byte{','})
		}
		_, _ = w.Write(line)
	}
	_, _ = w.Write([]byte{']'})
	if s.opa != nil {
		_ = s.zip.Close()
	}
	return body.Bytes()
}

// close stops the sender, then sends what is buffered, batch by batch, one attempt
// each, until ctx ends; what is left is dropped (shutdown).
func (s *httpSink) close(ctx context.Context) error {
	close(s.stop)
	<-s.done
	for ctx.Err() == nil {
		batch := s.peek()
		if len(batch) == 0 {
			return nil
		}
		status, err := s.post(ctx, batch)
		if err != nil || status/100 != 2 {
			break
		}
		s.take(len(batch))
		s.in.wrote(s.name(), len(batch))
	}
	s.mu.Lock()
	left := len(s.buf)
	s.buf = nil
	s.mu.Unlock()
	if left > 0 {
		s.in.drop(s.name(), DropShutdown, left)
		return fmt.Errorf("decision log: %d events not delivered to %s", left, s.opts.URL)
	}
	return nil
}
