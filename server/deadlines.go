package server

import (
	"errors"
	"io"
	"net/http"
	"time"
)

// Timeouts bound how long one call may hold its connection. They are set per request
// with http.ResponseController, not on the http.Server: a server-wide write timeout
// would cut a healthy stream, and a server-wide read timeout cancels the context of a
// handler that outlives it. A zero field is no bound.
type Timeouts struct {
	// Read bounds how long a request body may take to arrive, from the start of its
	// handler until the body's end.
	Read time.Duration
	// Write bounds the whole response of an API route, and each write (and flush) of
	// a streaming mount's response, so a client that stops reading is cut while a
	// stream of any length that is read goes on.
	Write time.Duration
}

// withDeadlines sets the read deadline of a call that has a body, lifted once the body
// has been read to its end, and the write deadline of the whole response.
func withDeadlines(t Timeouts, next http.Handler) http.Handler {
	if t == (Timeouts{}) {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if t.Read > 0 && r.Body != nil && r.Body != http.NoBody {
			_ = rc.SetReadDeadline(time.Now().Add(t.Read))
			// A shallow copy: the server keeps its own request's body as it was.
			r = r.WithContext(r.Context())
			r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
		}
		if t.Write > 0 {
			_ = rc.SetWriteDeadline(time.Now().Add(t.Write))
		}
		next.ServeHTTP(w, r)
	})
}

// deadlineBody lifts the read deadline when the body has been read to its end: after
// that, the server's own read of the connection (which notices a client going away)
// must not time out. Only the handler's goroutine reads it.
type deadlineBody struct {
	io.ReadCloser
	rc     *http.ResponseController
	lifted bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) && !b.lifted {
		b.lifted = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// streaming replaces the whole-response write deadline withDeadlines set by one per
// write and flush, for a route that streams its response (server-sent events).
func streaming(t Timeouts, next http.Handler) http.Handler {
	if t.Write <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		_ = rc.SetWriteDeadline(time.Time{})
		next.ServeHTTP(&streamWriter{ResponseWriter: w, rc: rc, timeout: t.Write}, r)
		_ = rc.SetWriteDeadline(time.Now().Add(t.Write))
	})
}

// streamWriter gives every write and flush its own deadline.
type streamWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (s *streamWriter) Write(p []byte) (int, error) {
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	return s.ResponseWriter.Write(p)
}

// FlushError flushes within the write timeout (http.ResponseController.Flush).
func (s *streamWriter) FlushError() error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	return s.rc.Flush()
}

// Flush implements http.Flusher.
func (s *streamWriter) Flush() { _ = s.FlushError() }

// Unwrap gives http.ResponseController the underlying writer.
func (s *streamWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
