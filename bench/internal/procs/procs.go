// Package procs starts and stops the servers the benchmark drives (agentd serve and
// opa run --server) as child processes on loopback, and reads their memory use.
package procs

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Server is a started child process serving HTTP on Addr.
type Server struct {
	Name string
	Addr string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

// FreeAddr returns a loopback address with a port that was free a moment ago.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// Spec describes a server to start.
type Spec struct {
	Name string
	// Addr is the loopback address the server is told to listen on.
	Addr string
	Bin  string
	Args []string
	// Env is added to the benchmark's environment.
	Env []string
	// Log receives the process's stdout and stderr.
	Log string
	// Ready is the path that answers 200 once the server serves.
	Ready string
}

// Start runs the server of spec and waits, at most timeout, until
// GET http://Addr+Ready answers 200.
func Start(spec Spec, timeout time.Duration) (*Server, error) {
	logFile, err := os.Create(spec.Log)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(spec.Bin, spec.Args...)
	cmd.Env = append(os.Environ(), spec.Env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", spec.Name, err)
	}
	s := &Server{Name: spec.Name, Addr: spec.Addr, cmd: cmd, log: spec.Log, done: make(chan struct{})}
	go func() {
		s.err = cmd.Wait()
		logFile.Close()
		close(s.done)
	}()
	if err := s.waitReady(spec.Ready, timeout); err != nil {
		_ = s.Stop()
		return nil, err
	}
	return s, nil
}

func (s *Server) waitReady(path string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: time.Second}
	for {
		select {
		case <-s.done:
			return fmt.Errorf("%s exited before it was ready (%v):\n%s", s.Name, s.err, s.LogTail(20))
		default:
		}
		if res, err := client.Get("http://" + s.Addr + path); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready on %s after %v:\n%s", s.Name, s.Addr, timeout, s.LogTail(20))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// PID returns the process id.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Stop sends SIGTERM and waits up to 15s for the process to exit, then kills it.
func (s *Server) Stop() error {
	select {
	case <-s.done:
		return nil
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
		return nil
	case <-time.After(15 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
		return fmt.Errorf("%s did not stop on SIGTERM within 15s; killed", s.Name)
	}
}

// LogTail returns the last n lines of the process's output.
func (s *Server) LogTail(n int) string {
	data, err := os.ReadFile(s.log)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

// Memory is a process's resident set, in bytes.
type Memory struct {
	RSS, HWM int64 // VmRSS and VmHWM (peak) of /proc/PID/status
}

// Memory reads VmRSS and VmHWM from /proc/PID/status.
func (s *Server) Memory() (Memory, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", s.PID()))
	if err != nil {
		return Memory{}, err
	}
	defer f.Close()
	var m Memory
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		var dst *int64
		switch name {
		case "VmRSS":
			dst = &m.RSS
		case "VmHWM":
			dst = &m.HWM
		default:
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return Memory{}, fmt.Errorf("/proc/%d/status %s: %w", s.PID(), name, err)
		}
		*dst = kb * 1024
	}
	if m.RSS == 0 {
		return Memory{}, errors.Join(sc.Err(), fmt.Errorf("/proc/%d/status has no VmRSS", s.PID()))
	}
	return m, sc.Err()
}

// Fetch GETs http://addr+path (a pprof endpoint, for instance) into a file.
func Fetch(ctx context.Context, addr, path, dst string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(res.Body); err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: status %d: %.200s", path, res.StatusCode, buf.Bytes())
	}
	return os.WriteFile(dst, buf.Bytes(), 0o644)
}

// clockTick is the unit of /proc/PID/stat's CPU times (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// CPUTime returns the user plus system CPU time the process has used, from
// /proc/PID/stat (in 10ms ticks).
func (s *Server) CPUTime() (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.PID()))
	if err != nil {
		return 0, err
	}
	// The command name, field 2, is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", s.PID())
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", s.PID(), len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(utime+stime) * clockTick, nil
}
