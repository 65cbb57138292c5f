// Package redisstat reads what a Redis server did for a benchmark: its CPU time (INFO
// cpu) and the commands clients sent it (MONITOR), so that the cost of a shared store
// per decision can be stated from measurement.
package redisstat

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Addr returns the host:port of a redis:// URL.
func Addr(redisURL string) (string, error) {
	u, err := url.Parse(redisURL)
	if err != nil {
		return "", err
	}
	if u.Scheme != "redis" || u.Host == "" {
		return "", fmt.Errorf("redisstat: %q is not a redis://host:port URL", redisURL)
	}
	return u.Host, nil
}

// CPU returns the server's CPU time so far, user and system (INFO cpu).
func CPU(addr string) (time.Duration, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write([]byte("INFO cpu\r\n")); err != nil {
		return 0, err
	}
	r := bufio.NewReader(conn)
	head, err := r.ReadString('\n')
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(head, "$")))
	if !strings.HasPrefix(head, "$") || err != nil {
		return 0, fmt.Errorf("redisstat: INFO answered %q", head)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, err
	}
	return parseCPU(string(body))
}

// parseCPU sums used_cpu_user and used_cpu_sys (seconds) of an INFO cpu section.
func parseCPU(info string) (time.Duration, error) {
	var total float64
	found := 0
	for line := range strings.Lines(info) {
		name, value, _ := strings.Cut(strings.TrimSpace(line), ":")
		if name == "used_cpu_user" || name == "used_cpu_sys" {
			s, err := strconv.ParseFloat(value, 64)
			if err != nil {
				return 0, fmt.Errorf("redisstat: %s: %w", name, err)
			}
			total += s
			found++
		}
	}
	if found != 2 {
		return 0, fmt.Errorf("redisstat: INFO cpu lacks used_cpu_user or used_cpu_sys")
	}
	return time.Duration(total * float64(time.Second)), nil
}

// Monitor counts the commands clients send the server while it runs. Commands a Lua
// script issues are not counted: a script is one command of its client, one round trip.
type Monitor struct {
	conn  net.Conn
	n     atomic.Int64
	ready chan struct{}
	done  chan error
}

// StartMonitor connects to addr and starts counting once the server confirms MONITOR.
func StartMonitor(ctx context.Context, addr string) (*Monitor, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	m := &Monitor{conn: conn, ready: make(chan struct{}), done: make(chan error, 1)}
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		conn.Close()
		return nil, err
	}
	go m.read()
	select {
	case <-m.ready:
		return m, nil
	case err := <-m.done:
		return nil, err
	case <-time.After(5 * time.Second):
		conn.Close()
		return nil, fmt.Errorf("redisstat: MONITOR not confirmed")
	}
}

func (m *Monitor) read() {
	sc := bufio.NewScanner(m.conn)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	first := true
	for sc.Scan() {
		line := sc.Text()
		if first {
			first = false
			if line != "+OK" {
				m.done <- fmt.Errorf("redisstat: MONITOR answered %q", line)
				return
			}
			close(m.ready)
			continue
		}
		// +<time> [<db> <client>] "<command>" …; a script's commands name lua as client.
		if _, rest, ok := strings.Cut(line, " ["); ok && !strings.HasPrefix(rest[strings.IndexByte(rest, ' ')+1:], "lua]") {
			m.n.Add(1)
		}
	}
	m.done <- sc.Err()
}

// Stop ends the monitor and returns the commands counted.
func (m *Monitor) Stop() int64 {
	m.conn.Close()
	<-m.done
	return m.n.Load()
}
