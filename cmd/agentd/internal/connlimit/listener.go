// Package connlimit caps how many connections a listener has open at once, so a flood
// of clients cannot exhaust the process's file descriptors: past the cap, connections
// wait in the kernel's accept queue until one of the open ones closes.
package connlimit

import (
	"net"
	"sync"
)

// Listener is a net.Listener with at most a fixed number of accepted connections open.
type Listener struct {
	net.Listener
	slots     chan struct{}
	closed    chan struct{}
	closeOnce sync.Once
}

// New returns ln capped at max open connections (max must be positive).
func New(ln net.Listener, max int) *Listener {
	return &Listener{Listener: ln, slots: make(chan struct{}, max), closed: make(chan struct{})}
}

// Accept waits for a free slot, then for a connection. The slot is released when the
// connection is closed.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.closed:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &conn{Conn: c, release: sync.OnceFunc(func() { <-l.slots })}, nil
}

// Close closes the listener; an Accept waiting for a slot returns net.ErrClosed.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// conn releases its slot once, on the first Close.
type conn struct {
	net.Conn
	release func()
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}
