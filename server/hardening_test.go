package server

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/config/reload"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/store"
)

func TestHardening_TokenFile(t *testing.T) {
	sum := sha256.Sum256([]byte("s3cret"))
	hexSum := hex.EncodeToString(sum[:])
	for _, tc := range []struct {
		name, file string
		want       []Token
		errs       []string // each a name:line:col prefix or a phrase of one error
	}{
		{"one bare token is admin", "s3cret\n", []Token{{SHA256: sum, Role: RoleAdmin}}, nil},
		{"a bare token that looks like YAML", "a:b\n", []Token{{SHA256: sha256.Sum256([]byte("a:b")), Role: RoleAdmin}}, nil},
		{"a list", "- token: s3cret\n  role: viewer\n  tenant: acme\n- token_sha256: " + strings.ToUpper(hexSum) + "\n  role: admin\n",
			nil, []string{"tokens:4:3: the same token as at line 1"}},
		{"a hash that is not one", "- token_sha256: " + hexSum + "x\n  role: admin\n", nil, []string{"tokens:1:17: token_sha256 must be 64 hex digits"}},
		{"a JSON list", `[{"token_sha256":"` + hexSum + `","role":"orchestrator","tenant":"acme"}]`,
			[]Token{{SHA256: sum, Role: RoleOrchestrator, Tenant: "acme"}}, nil},
		{"hashed and plain", "- token_sha256: " + hexSum + "\n  role: orchestrator\n- token: other\n  role: viewer\n  tenant: acme\n",
			[]Token{{SHA256: sum, Role: RoleOrchestrator}, {SHA256: sha256.Sum256([]byte("other")), Role: RoleViewer, Tenant: "acme"}}, nil},
		{"an approver with a name", "- token: s3cret\n  role: approver\n  name: desk-lead\n",
			[]Token{{SHA256: sum, Role: RoleApprover, Name: "desk-lead"}}, nil},
		{"empty", "  \n", nil, []string{"is empty"}},
		{"two words", "s3cret other\n", nil, []string{"neither one bare token"}},
		{"a mapping", "tokens:\n  - token: x\n", nil, []string{"neither one bare token"}},
		{"empty list", "[]", nil, []string{"tokens:1:1: the token list is empty"}},
		{"every mistake, positioned", "- token: a\n  role: root\n- role: admin\n- token: b\n  token_sha256: " + hexSum + "\n  role: admin\n- token: c\n  role: viewer\n  owner: me\n- token: c\n  role: admin\n- s3cret\n- token: [x]\n  role: admin\n",
			nil, []string{
				`tokens:2:9: unknown role "root"`,
				"tokens:3:3: a token needs exactly one of token and token_sha256",
				"tokens:4:3: a token needs exactly one of token and token_sha256",
				`tokens:9:3: unknown field "owner"`,
				"tokens:10:3: the same token as at line 7",
				"tokens:12:3: a token is a mapping",
				"tokens:13:10: token must be a non-empty string",
			}},
		{"no role", "- token: a\n", nil, []string{"tokens:1:3: a token needs a role"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseTokenFile("tokens", []byte(tc.file))
			if len(tc.errs) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(got) != fmt.Sprint(tc.want) {
					t.Fatalf("tokens = %v, want %v", got, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, tokens %v", got)
			}
			for _, want := range tc.errs {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q:\n%v", want, err)
				}
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("the error quotes a token: %v", err)
			}
		})
	}
}

// routeCase is one call of the route table test and the role it needs ("" public).
type routeCase struct {
	method, path string
	role         Role
}

// TestHardening_RouteRoles: every route answers a token whose role may not call it 403
// forbidden, and one whose role may call it anything but 401 and 403; an admin token
// calls everything; a mount without a role is admin's; public routes need no token.
func TestHardening_RouteRoles(t *testing.T) {
	svc, _ := newTestService(t)
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	tokens := []Token{
		{SHA256: sha256.Sum256([]byte("admin")), Role: RoleAdmin},
		{SHA256: sha256.Sum256([]byte("orchestrator")), Role: RoleOrchestrator},
		{SHA256: sha256.Sum256([]byte("viewer")), Role: RoleViewer},
	}
	h := svc.Handler(HTTPOptions{Tokens: tokens, Metrics: ok, Mounts: []Mount{
		{Pattern: "POST /v1/chat/completions", Handler: ok, Role: RoleOrchestrator, Stream: true},
		{Pattern: "GET /ui/", Handler: ok, Role: RoleViewer},
		{Pattern: "/admin-only", Handler: ok},
	}})
	for _, rc := range []routeCase{
		{"POST", "/v1/hooks/before_planning", RoleOrchestrator},
		{"POST", "/v1/hooks/after_planning", RoleOrchestrator},
		{"POST", "/v1/hooks/after_execution", RoleOrchestrator},
		{"POST", "/v1/hooks/after_synthesis", RoleOrchestrator},
		{"POST", "/v1/operations/check", RoleOrchestrator},
		{"POST", "/v1/operations/finish", RoleOrchestrator},
		{"POST", "/v1/chat/completions", RoleOrchestrator},
		{"GET", "/v1/executions/r", RoleViewer},
		{"GET", "/v1/status", RoleViewer},
		{"GET", "/metrics", RoleViewer},
		{"GET", "/ui/requests", RoleViewer},
		{"GET", "/admin-only", RoleAdmin},
		{"GET", "/healthz", ""},
		{"GET", "/readyz", ""},
	} {
		for _, tok := range []string{"", "nope", "admin", "orchestrator", "viewer"} {
			t.Run(rc.method+" "+rc.path+" as "+cmpOr(tok, "nobody"), func(t *testing.T) {
				req := newRequest(rc.method, rc.path, strings.NewReader("{}"))
				if tok != "" {
					req.Header.Set("Authorization", "Bearer "+tok)
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				want := "allowed"
				switch {
				case rc.role == "":
				case tok == "" || tok == "nope":
					want = "401"
				case Role(tok) != RoleAdmin && Role(tok) != rc.role:
					want = "403"
				}
				got := "allowed"
				switch {
				case rec.Code == http.StatusUnauthorized && strings.Contains(rec.Body.String(), `"type":"unauthorized"`) && rec.Header().Get("Connection") == "close":
					got = "401"
				case rec.Code == http.StatusForbidden && strings.Contains(rec.Body.String(), `"type":"forbidden"`):
					got = "403"
				case rec.Code == http.StatusUnauthorized || rec.Code == http.StatusForbidden:
					got = fmt.Sprintf("untyped %d", rec.Code)
				}
				if got != want {
					t.Fatalf("answer %d (%s), want %s: %s", rec.Code, got, want, rec.Body)
				}
			})
		}
	}
}

func cmpOr(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// TestHardening_WriteTimeoutSpareHealthyStreams: a streaming mount's response outlives
// the write timeout for as long as each write goes through, while a client that stops
// reading it is cut; an API route's whole response is bounded.
func TestHardening_WriteTimeoutSpareHealthyStreams(t *testing.T) {
	svc, _ := newTestService(t)
	const timeout = time.Second
	events := func(n int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			for i := range n {
				if _, err := fmt.Fprintf(w, "data: %d\n\n", i); err != nil {
					return
				}
				if err := http.NewResponseController(w).Flush(); err != nil {
					return
				}
				time.Sleep(timeout / 5)
			}
		}
	}
	writeErr := make(chan error, 1)
	flood := func(w http.ResponseWriter, r *http.Request) {
		chunk := []byte(strings.Repeat("x", 64<<10))
		for {
			if _, err := w.Write(chunk); err != nil {
				writeErr <- err
				return
			}
		}
	}
	srv := httptest.NewServer(svc.Handler(HTTPOptions{Timeouts: Timeouts{Read: timeout, Write: timeout}, Mounts: []Mount{
		{Pattern: "GET /stream", Handler: events(15), Stream: true},
		{Pattern: "GET /bounded", Handler: events(15)},
		{Pattern: "GET /unread", Handler: http.HandlerFunc(flood), Stream: true},
	}}))
	defer srv.Close()
	count := func(path string) (int, error) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		n := 0
		lines := bufio.NewScanner(resp.Body)
		for lines.Scan() {
			if strings.HasPrefix(lines.Text(), "data: ") {
				n++
			}
		}
		return n, lines.Err()
	}
	if n, err := count("/stream"); n != 15 || err != nil {
		t.Fatalf("the stream delivered %d of 15 events over three write timeouts: %v", n, err)
	}
	if n, err := count("/bounded"); n >= 15 && err == nil {
		t.Fatalf("a response of three write timeouts on a route that does not stream was not cut (%d events)", n)
	}
	c, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET /unread HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-writeErr:
		t.Logf("a stream nobody reads was cut: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("a stream nobody reads kept writing for a minute")
	}
}

// TestHardening_UnknownOperationsAreBounded: checks of unknown operation names count as
// operation "unknown", and no label input grows the attribute-set cache past its bound.
func TestHardening_UnknownOperationsAreBounded(t *testing.T) {
	p, _ := engine.New(nil)
	registry := reload.NewRegistry(1)
	registry.Swap(&config.Generation{Generation: engine.Generation{ID: "g", Pipeline: p}})
	reader := sdkmetric.NewManualReader()
	mem := store.NewMemory(store.MemoryOptions{})
	svc, metrics, err := newMeteredService(hostConfig{Registry: registry, States: mem, Records: mem, MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	if err != nil {
		t.Fatal(err)
	}
	h := svc.Handler(HTTPOptions{})
	for i := range 300 {
		if rec := post(h, "/v1/operations/check", fmt.Sprintf(`{"operation":"op-%d","call":{"request_id":"r"}}`, i)); rec.Code != http.StatusBadRequest {
			t.Fatalf("unknown operation answered %d %s", rec.Code, rec.Body)
		}
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var points []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == "agentd.operation.checks" {
				for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
					v, _ := dp.Attributes.Value("operation")
					points = append(points, fmt.Sprintf("%s=%d", v.AsString(), dp.Value))
				}
			}
		}
	}
	if fmt.Sprint(points) != "[unknown=300]" {
		t.Fatalf("operation check points = %v, want [unknown=300]", points)
	}
	if n := len(metrics.tel.sets.sets); n > 2 {
		t.Fatalf("the attribute-set cache holds %d sets after 300 unknown operations", n)
	}
	for i := range maxAttrSets + 100 {
		metrics.tel.sets.get(attrKey{k1: "k", v1: fmt.Sprint(i)})
	}
	if n := len(metrics.tel.sets.sets); n != maxAttrSets {
		t.Fatalf("the attribute-set cache holds %d sets, want its bound %d", n, maxAttrSets)
	}
}

// leakyPanicHook panics with a value that quotes the request text.
type leakyPanicHook struct{}

func (leakyPanicHook) Name() string { return "leaky-panic" }
func (leakyPanicHook) BeforePlanning(_ context.Context, pctx *engine.PipelineContext) (*engine.ShortCircuit, error) {
	panic("cannot handle " + pctx.Request)
}

// TestHardening_PanicLogsNoRequestText: a hook panic's value is logged by its type
// only, unless payloads are logged.
func TestHardening_PanicLogsNoRequestText(t *testing.T) {
	for _, payloads := range []bool{false, true} {
		svc, _ := newTestService(t, leakyPanicHook{})
		var log strings.Builder
		svc.cfg.Logger = slog.New(slog.NewJSONHandler(&log, nil))
		svc.cfg.LogPayloads = payloads
		if rec := post(svc.Handler(HTTPOptions{}), "/v1/hooks/before_planning", `{"request_id":"r","request":"SECRET-QUESTION"}`); rec.Code != http.StatusInternalServerError {
			t.Fatalf("answer = %d %s", rec.Code, rec.Body)
		}
		if !strings.Contains(log.String(), "request panicked") || strings.Contains(log.String(), "SECRET-QUESTION") != payloads {
			t.Fatalf("with payloads %v the log is:\n%s", payloads, log.String())
		}
	}
}

// FuzzParseTokenFile: whatever a token file holds, parsing it neither panics nor
// accepts a token without a known role.
func FuzzParseTokenFile(f *testing.F) {
	f.Add([]byte("s3cret\n"))
	f.Add([]byte("- token: s3cret\n  role: orchestrator\n  tenant: acme\n"))
	f.Add([]byte(`[{"token_sha256":"` + strings.Repeat("ab", 32) + `","role":"viewer"}]`))
	f.Add([]byte("- token: s3cret\n  role: root\n  owner: me\n- [x]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tokens, err := ParseTokenFile("tokens", data)
		if err != nil {
			if tokens != nil {
				t.Fatalf("tokens %v with error %v", tokens, err)
			}
			return
		}
		if len(tokens) == 0 {
			t.Fatal("no tokens and no error")
		}
		for _, tok := range tokens {
			if tok.Role != RoleAdmin && tok.Role != RoleOrchestrator && tok.Role != RoleViewer {
				t.Fatalf("token with role %q", tok.Role)
			}
		}
	})
}
