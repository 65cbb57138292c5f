package connlimit

import (
	"errors"
	"net"
	"testing"
	"time"
)

// TestHardening_ConnectionCap: past the cap a connection waits in the accept queue
// until an open one closes; closing twice frees one slot; Close ends a waiting Accept.
func TestHardening_ConnectionCap(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := New(inner, 2)
	accepted := make(chan net.Conn)
	acceptErr := make(chan error, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				acceptErr <- err
				return
			}
			accepted <- c
		}
	}()
	for range 3 {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	first, second := <-accepted, <-accepted
	select {
	case c := <-accepted:
		t.Fatalf("a third connection %v was accepted with the cap at 2", c.RemoteAddr())
	case <-time.After(200 * time.Millisecond):
	}
	if n := len(ln.slots); n != 2 {
		t.Fatalf("%d slots taken, want 2", n)
	}
	first.Close()
	first.Close()
	third := <-accepted
	if n := len(ln.slots); n != 2 {
		t.Fatalf("after one close and one accept %d slots taken, want 2", n)
	}
	second.Close()
	third.Close()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-acceptErr; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept after Close = %v, want net.ErrClosed", err)
	}
}
