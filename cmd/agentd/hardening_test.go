package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/server"
)

// rawCall sends head (request line and headers, no body) on a connection of its own,
// then reads the answer until the daemon closes the connection, within a generous
// bound: a daemon that waited for the body would not answer or close within it.
func rawCall(t *testing.T, url, head string) (status int, closing bool, body string) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(head)); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(time.Minute))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read answer: %v", err)
	}
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("the connection was not closed after the answer: %v", err)
	}
	return resp.StatusCode, resp.Close, string(data)
}

// TestHardening_UnauthorizedIsClosedUnread: a call without a valid token is answered
// 401 at once and its connection closed, its announced body never awaited (the read
// timeout is ten minutes here).
func TestHardening_UnauthorizedIsClosedUnread(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, filepath.Join(repoRoot(t), "examples", "stock-agent"), "--token-file", tokenFile, "--read-timeout", "10m")
	for name, auth := range map[string]string{"no token": "", "wrong token": "Authorization: Bearer nope\r\n"} {
		t.Run(name, func(t *testing.T) {
			status, closing, body := rawCall(t, d.url, "POST /v1/hooks/before_planning HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"+auth+"Content-Length: 100000\r\n\r\n{")
			if status != http.StatusUnauthorized || !closing || !strings.Contains(body, `"type":"unauthorized"`) {
				t.Fatalf("answer = %d (Connection: close %v) %s", status, closing, body)
			}
		})
	}
}

// TestHardening_SlowBodyIsCutAtTheReadTimeout: a body that stops arriving is answered
// 408 request_timeout once the read timeout has passed, and its connection closed.
func TestHardening_SlowBodyIsCutAtTheReadTimeout(t *testing.T) {
	d := startDaemon(t, filepath.Join(repoRoot(t), "examples", "stock-agent"), "--read-timeout", "1s")
	status, _, body := rawCall(t, d.url, "POST /v1/hooks/before_planning HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"request_id\":")
	if status != http.StatusRequestTimeout || !strings.Contains(body, `"type":"request_timeout"`) {
		t.Fatalf("answer = %d %s", status, body)
	}
	if status, body := d.do(t, "POST", "/v1/hooks/before_planning", `{"request_id":"after-slow","request":"x"}`); status != 200 {
		t.Fatalf("next call = %d %s", status, body)
	}
}

// TestHardening_AuthOffWarnsOffLoopback: serving without a token on an address other
// hosts reach logs a warning at start; on loopback it does not.
func TestHardening_AuthOffWarnsOffLoopback(t *testing.T) {
	example := filepath.Join(repoRoot(t), "examples", "stock-agent")
	for addr, warn := range map[string]bool{"0.0.0.0:0": true, "127.0.0.1:0": false} {
		t.Run(addr, func(t *testing.T) {
			cmd := exec.Command(binary, "serve", "--config", example, "--addr", addr, "--data-dir", t.TempDir())
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
			var log strings.Builder
			lines := bufio.NewScanner(stderr)
			for lines.Scan() {
				log.WriteString(lines.Text() + "\n")
				if strings.Contains(lines.Text(), `"msg":"agentd listening"`) {
					break
				}
			}
			if got := strings.Contains(log.String(), "no --token-file"); got != warn {
				t.Fatalf("warning logged = %v, want %v:\n%s", got, warn, log.String())
			}
		})
	}
}

// TestHardening_RolesAndTenants runs the role and tenant table against the daemon with a
// token file of hashed and plain tokens: each call gets its answer, and the refusals
// are typed 401/403 errors.
func TestHardening_RolesAndTenants(t *testing.T) {
	hash := func(s string) string { sum := sha256.Sum256([]byte(s)); return hex.EncodeToString(sum[:]) }
	tokenFile := filepath.Join(t.TempDir(), "tokens.yaml")
	if err := os.WriteFile(tokenFile, []byte(fmt.Sprintf(`
- token_sha256: %s
  role: admin
- token_sha256: %s
  role: orchestrator
  tenant: acme
- token: orch-any
  role: orchestrator
- token: viewer-acme
  role: viewer
  tenant: acme
- token: viewer-all
  role: viewer
`, hash("admin-secret"), hash("orch-acme"))), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, filepath.Join(repoRoot(t), "examples", "stock-agent"), "--token-file", tokenFile)
	open := func(id, tenant string) string {
		return fmt.Sprintf(`{"request_id":%q,"request":"price of ACME","metadata":{"tenant":%q}}`, id, tenant)
	}
	for _, row := range []struct {
		name, token, method, path, body string
		status                          int
		errType                         string
	}{
		{"admin opens any tenant's request", "admin-secret", "POST", "/v1/hooks/before_planning", open("globex-1", "globex"), 200, ""},
		{"untenanted orchestrator opens any tenant's request", "orch-any", "POST", "/v1/hooks/before_planning", open("initech-1", "initech"), 200, ""},
		{"tenant orchestrator opens its tenant's request", "orch-acme", "POST", "/v1/hooks/before_planning", open("acme-1", "acme"), 200, ""},
		{"tenant orchestrator opens another tenant's request", "orch-acme", "POST", "/v1/hooks/before_planning", open("acme-2", "globex"), 403, "tenant_forbidden"},
		{"tenant orchestrator opens a request without tenant", "orch-acme", "POST", "/v1/hooks/before_planning", `{"request_id":"acme-3","request":"x"}`, 403, "tenant_forbidden"},
		{"tenant orchestrator reopens another tenant's request", "orch-acme", "POST", "/v1/hooks/before_planning", open("globex-1", "acme"), 403, "tenant_forbidden"},
		{"tenant orchestrator plans on another tenant's request", "orch-acme", "POST", "/v1/hooks/after_planning", `{"request_id":"globex-1","plan":` + quotePlan + `}`, 403, "tenant_forbidden"},
		{"tenant orchestrator finishes another tenant's request", "orch-acme", "POST", "/v1/hooks/after_synthesis", `{"request_id":"globex-1","response":"x"}`, 403, "tenant_forbidden"},
		{"tenant orchestrator checks on another tenant's request", "orch-acme", "POST", "/v1/operations/check", `{"operation":"turn","call":{"request_id":"globex-1"}}`, 403, "tenant_forbidden"},
		{"tenant orchestrator plans on its tenant's request", "orch-acme", "POST", "/v1/hooks/after_planning", `{"request_id":"acme-1","plan":` + quotePlan + `}`, 200, ""},
		{"orchestrator may not read records", "orch-any", "GET", "/v1/executions/initech-1", "", 403, "forbidden"},
		{"orchestrator may not read status", "orch-any", "GET", "/v1/status", "", 403, "forbidden"},
		{"viewer may not make stage calls", "viewer-all", "POST", "/v1/hooks/before_planning", open("v-1", "acme"), 403, "forbidden"},
		{"viewer may not check operations", "viewer-all", "POST", "/v1/operations/check", `{"operation":"turn","call":{"request_id":"acme-1"}}`, 403, "forbidden"},
		{"viewer reads any record", "viewer-all", "GET", "/v1/executions/globex-1", "", 200, ""},
		{"viewer reads status", "viewer-all", "GET", "/v1/status", "", 200, ""},
		{"viewer reads metrics", "viewer-all", "GET", "/metrics", "", 200, ""},
		{"tenant viewer reads its tenant's record", "viewer-acme", "GET", "/v1/executions/acme-1", "", 200, ""},
		{"tenant viewer reads another tenant's record", "viewer-acme", "GET", "/v1/executions/globex-1", "", 404, "not_found"},
		{"admin reads any record", "admin-secret", "GET", "/v1/executions/acme-1", "", 200, ""},
		{"a hash is not a token", hash("admin-secret"), "GET", "/v1/status", "", 401, "unauthorized"},
	} {
		t.Run(row.name, func(t *testing.T) {
			status, body := d.do(t, row.method, row.path, row.body, "Authorization", "Bearer "+row.token)
			if status != row.status {
				t.Fatalf("answer = %d, want %d: %.400s", status, row.status, body)
			}
			if row.errType == "" {
				return
			}
			var e apiErrorBody
			if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error["type"] != row.errType {
				t.Fatalf("error = %s, want type %s", body, row.errType)
			}
			if strings.Contains(body, "globex") && !strings.Contains(row.path+row.body, "globex") {
				t.Fatalf("the refusal names another tenant: %s", body)
			}
		})
	}
}

// TestHardening_StoreErrorsNameNoAddress: with Redis unreachable, every call that needs
// state answers 503 store_unavailable without Redis's address; a --store URL the daemon
// cannot use stops it without echoing the URL's password.
func TestHardening_StoreErrorsNameNoAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, port, _ := net.SplitHostPort(addr)
	example := filepath.Join(repoRoot(t), "examples", "stock-agent")
	d := startDaemon(t, example, "--store", "redis://:pw-s3cret@"+addr+"/0")
	for _, call := range []struct{ method, path, body string }{
		{"POST", "/v1/hooks/before_planning", `{"request_id":"r","request":"x"}`},
		{"POST", "/v1/hooks/after_synthesis", `{"request_id":"r","response":"x"}`},
		{"POST", "/v1/operations/check", `{"operation":"turn","call":{"request_id":"r"}}`},
		{"GET", "/v1/executions/r", ""},
	} {
		status, body := d.do(t, call.method, call.path, call.body)
		if status != http.StatusServiceUnavailable || !strings.Contains(body, `"type":"store_unavailable"`) ||
			strings.Contains(body, port) || strings.Contains(body, "127.0.0.1") || strings.Contains(body, "pw-s3cret") {
			t.Errorf("%s %s = %d %s", call.method, call.path, status, body)
		}
	}
	for _, url := range []string{
		"redis://:pw-s3cret@127.0.0.1:notaport/0",
		"redis://:pw-s3cret@127.0.0.1:6379/not-a-db",
		"redis://:pw-s3cret@127.0.0.1:6379/0?timeout=soon",
	} {
		code, _, stderr := runCLI(t, "serve", "--config", example, "--addr", "127.0.0.1:0", "--store", url)
		if code == 0 || !strings.Contains(stderr, "redis URL") && !strings.Contains(stderr, "redis:") || strings.Contains(stderr, "pw-s3cret") {
			t.Errorf("--store %s: exit %d, %s", url, code, stderr)
		}
	}
}

// TestHardening_READMETokenFileParses: the README's token file example is one the
// daemon reads.
func TestHardening_READMETokenFileParses(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(readme), -1) {
		if !strings.Contains(m[1], "token_sha256") {
			continue
		}
		tokens, err := server.ParseTokenFile("README.md", []byte(m[1]))
		if err != nil || len(tokens) != 4 || tokens[1].Role != server.RoleOrchestrator || tokens[1].Tenant != "acme" ||
			tokens[3].Role != server.RoleApprover || tokens[3].Name != "desk-lead" {
			t.Fatalf("the README's token file = %+v, %v", tokens, err)
		}
		return
	}
	t.Fatal("the README has no token file example")
}
