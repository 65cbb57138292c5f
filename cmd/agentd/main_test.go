package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/internal/capture"
)

// binary is the agentd binary built once for the black-box tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "agentd-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "agentd")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build agentd:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// repoRoot is the repository root, two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// daemon is a running `agentd serve`.
type daemon struct {
	url    string
	cmd    *exec.Cmd
	stderr *capture.Buffer
	// exited is closed once the process has exited; exitErr is then its Wait error.
	exited  chan struct{}
	exitErr error
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startDaemon runs agentd serve on config ("": none, for --bundle) with extra flags and
// waits until it is ready. Its default store keeps its file in a directory of t's
// (--data-dir, which flags may override). The daemon is stopped with SIGTERM at cleanup,
// which must exit 0.
func startDaemon(t *testing.T, config string, flags ...string) *daemon {
	t.Helper()
	return startDaemonEnv(t, nil, config, flags...)
}

// startDaemonEnv is startDaemon with extra environment variables (KEY=value).
func startDaemonEnv(t *testing.T, env []string, config string, flags ...string) *daemon {
	t.Helper()
	addr := freeAddr(t)
	d := &daemon{url: "http://" + addr, stderr: &capture.Buffer{}, exited: make(chan struct{})}
	args := append([]string{"serve", "--addr", addr, "--data-dir", t.TempDir()}, flags...)
	if config != "" { // "": the flags name the config (--bundle)
		args = append(args, "--config", config)
	}
	d.cmd = exec.Command(binary, args...)
	d.cmd.Env = append(os.Environ(), env...)
	d.cmd.Stderr = d.stderr
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		d.exitErr = d.cmd.Wait()
		close(d.exited)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(d.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-d.exited:
			t.Fatalf("agentd exited before ready: %v\n%s", d.exitErr, d.stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("agentd not ready after 30s\n%s", d.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Cleanup(func() { d.stop(t) })
	return d
}

// stop sends SIGTERM and requires a clean exit.
func (d *daemon) stop(t *testing.T) {
	t.Helper()
	select {
	case <-d.exited:
		return
	default:
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
		if d.exitErr != nil {
			t.Errorf("agentd exited with %v after SIGTERM\n%s", d.exitErr, d.stderr)
		}
	case <-time.After(30 * time.Second):
		_ = d.cmd.Process.Kill()
		t.Errorf("agentd did not stop within 30s of SIGTERM")
	}
}

// do sends a request and returns the status and body.
func (d *daemon) do(t *testing.T, method, path, body string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, d.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// runCLI runs the agentd binary and returns its exit code and output.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, stdout.String(), stderr.String()
}
