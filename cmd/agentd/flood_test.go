package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// floodEnv raises the slow-body flood of TestHardening_SlowBodyFlood from its default
// (1,000 connections against a cap of 200) to that many connections against the
// default cap, e.g. AGENTD_TEST_FLOOD=19000: the scale that exhausted file descriptors.
const floodEnv = "AGENTD_TEST_FLOOD"

// callTimeout is the failure bound of the authorized call made during a flood.
const callTimeout = 3 * time.Minute

// TestHardening_SlowBodyFlood: thousands of connections dripping a stage call's body
// one byte every two seconds do not stop an authorized call, which completes.
//
// With a token configured, the flood presents none: each of its calls is answered 401
// and its connection closed without its body being read, so the flood holds no
// connection for long. Without a token every caller is authorized, the flood too: its
// calls hold connections, at most --max-connections of them, each until the read
// timeout cuts its body (408); the authorized call waits for a free connection and then
// completes.
func TestHardening_SlowBodyFlood(t *testing.T) {
	conns, maxConns := 1000, "200"
	if v := os.Getenv(floodEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("%s=%q is not a positive number", floodEnv, v)
		}
		conns, maxConns = n, "4096"
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if budget := int(lim.Cur) - 512; conns > budget {
		t.Logf("flooding with %d connections, what the open-file limit %d leaves", budget, lim.Cur)
		conns = budget
	}
	example := filepath.Join(repoRoot(t), "examples", "stock-agent")
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("flood-s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		flags []string
		auth  string
	}{
		// A read timeout too long to free a connection within callTimeout: only the 401
		// answered at once, its connection closed, lets the authorized call through.
		{"token configured, flood without it", []string{"--token-file", tokenFile, "--read-timeout", "10m"}, "Bearer flood-s3cret"},
		// The flood holds every connection; only the read timeout frees them.
		{"no token: the flood is authorized too", []string{"--read-timeout", "3s"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := startDaemon(t, example, append([]string{"--max-connections", maxConns}, tc.flags...)...)
			f := startFlood(strings.TrimPrefix(d.url, "http://"), conns)
			defer f.stop()
			if err := f.waitOpened(conns, callTimeout); err != nil {
				t.Fatal(err)
			}
			status, body, err := authorizedCall(d.url, tc.auth)
			if err != nil || status != http.StatusOK {
				t.Fatalf("authorized call during a flood of %d connections: %d %s %v\n%s", conns, status, body, err, tail(d.stderr.String(), 2000))
			}
			t.Logf("flood of %d connections (%d opened in all); the authorized call answered %d", conns, f.opened.Load(), status)
		})
	}
}

// flood holds connections that send a stage call's headers and drip its body.
type flood struct {
	done   chan struct{}
	wg     sync.WaitGroup
	opened atomic.Int64
}

// startFlood opens n connections to addr; each sends the headers of a 1,000-byte
// before_planning call without a token and then one body byte every two seconds, and
// is opened again once the daemon closes it.
func startFlood(addr string, n int) *flood {
	f := &flood{done: make(chan struct{})}
	head := "POST /v1/hooks/before_planning HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
	for range n {
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			for !f.stopped() {
				c, err := net.DialTimeout("tcp", addr, 10*time.Second)
				if err != nil {
					f.pause(time.Second)
					continue
				}
				f.opened.Add(1)
				_, err = c.Write([]byte(head))
				for err == nil && f.pause(2*time.Second) {
					_, err = c.Write([]byte("{"))
				}
				c.Close()
				f.pause(100 * time.Millisecond)
			}
		}()
	}
	return f
}

// pause waits d and reports whether the flood goes on.
func (f *flood) pause(d time.Duration) bool {
	select {
	case <-f.done:
		return false
	case <-time.After(d):
		return true
	}
}

func (f *flood) stopped() bool {
	select {
	case <-f.done:
		return true
	default:
		return false
	}
}

func (f *flood) stop() {
	close(f.done)
	f.wg.Wait()
}

// waitOpened waits until n connections were opened.
func (f *flood) waitOpened(n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for f.opened.Load() < int64(n) {
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d flood connections opened within %s", f.opened.Load(), n, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// authorizedCall makes one before_planning call on a connection of its own.
func authorizedCall(url, auth string) (int, string, error) {
	client := &http.Client{Timeout: callTimeout, Transport: &http.Transport{DisableKeepAlives: true}}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url+"/v1/hooks/before_planning",
		strings.NewReader(`{"request_id":"authorized","request":"price of ACME","metadata":{"tenant":"acme"}}`))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
