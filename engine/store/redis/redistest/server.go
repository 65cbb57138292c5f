package redistest

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Server is a private redis-server child process on a loopback port. It persists
// every write to an append-only file before answering (appendfsync always), so a
// stop, a kill or a restart loses nothing Redis acknowledged. The test that started it
// may stop and restart it at will; it is stopped when the test ends.
type Server struct {
	t    testing.TB
	port int
	dir  string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// StartServer starts a private redis-server, or skips the test (fails it under
// CI=true) when redis-server is not installed.
func StartServer(t testing.TB) *Server {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		Unavailable(t, "redis-server is not installed (apt-get install redis-server)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	s := &Server{t: t, port: port, dir: t.TempDir()}
	s.Start()
	t.Cleanup(s.Stop)
	return s
}

// Addr is host:port of the server.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// URL is the server's redis:// URL (database 0).
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

// Start (re)starts the server on its port and data directory and waits until it
// answers PING.
func (s *Server) Start() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return
	}
	log, err := os.OpenFile(filepath.Join(s.dir, "redis.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		s.t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--dir", s.dir, "--save", "", "--appendonly", "yes", "--appendfsync", "always", "--daemonize", "no")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start redis-server: %v", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	s.cmd, s.done = cmd, done
	deadline := time.Now().Add(15 * time.Second)
	for ping(s.Addr()) != nil {
		select {
		case <-done:
			s.cmd = nil
			s.t.Fatalf("redis-server exited at start; log:\n%s", s.log())
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("redis-server not answering after 15s; log:\n%s", s.log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop ends the server with SIGTERM and waits for it to exit.
func (s *Server) Stop() { s.signal(syscall.SIGTERM) }

// Kill ends the server with SIGKILL and waits for it to exit.
func (s *Server) Kill() { s.signal(syscall.SIGKILL) }

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(sig)
	select {
	case <-s.done:
	case <-time.After(15 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd = nil
}

func (s *Server) log() string {
	data, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
	return string(data)
}
