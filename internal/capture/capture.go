// Package capture keeps what tests need to read back from writers and endpoints that
// other goroutines feed: a log buffer, the bodies an HTTP endpoint received.
package capture

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"
)

// Buffer is a bytes.Buffer safe for concurrent use: a log's destination that a test
// reads while the log is being written.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Bodies is an HTTP endpoint that keeps the body of every request it receives and
// answers 200.
type Bodies struct {
	mu     sync.Mutex
	bodies []string
}

// ServeHTTP keeps r's body.
func (e *Bodies) ServeHTTP(_ http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	e.mu.Lock()
	e.bodies = append(e.bodies, string(body))
	e.mu.Unlock()
}

// All returns the bodies received so far, one per line.
func (e *Bodies) All() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return strings.Join(e.bodies, "\n")
}
