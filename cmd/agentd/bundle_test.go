package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/docs/apitest"
)

// rsaKeys writes a fresh RSA key pair into dir and returns the private and public
// key files.
func rsaKeys(t *testing.T, dir string) (private, public string) {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	private, public = filepath.Join(dir, "private.pem"), filepath.Join(dir, "public.pem")
	writeFile(t, dir, "private.pem", string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})))
	writeFile(t, dir, "public.pem", string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})))
	return private, public
}

// buildBundle runs agentd build on dir with flags and returns the bundle's bytes.
func buildBundle(t *testing.T, dir string, flags ...string) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "bundle.tar.gz")
	if code, stdout, stderr := runCLI(t, append(append([]string{"build", "--output", out}, flags...), dir)...); code != 0 {
		t.Fatalf("agentd build = %d\n%s%s", code, stdout, stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// tamper flips one byte of the first policy in a bundle, keeping everything else.
func tamper(t *testing.T, data []byte) []byte {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	done := false
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		if !done && strings.HasSuffix(hdr.Name, ".rego") {
			body[len(body)/2] ^= 1
			done = true
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		_, _ = tw.Write(body)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if !done {
		t.Fatal("the bundle has no policy to tamper with")
	}
	return buf.Bytes()
}

func TestBuild_TheStockOPAVerifiesTheSignature(t *testing.T) {
	dir := t.TempDir()
	private, public := rsaKeys(t, dir)
	signed := filepath.Join(dir, "signed.tar.gz")
	if err := os.WriteFile(signed, buildBundle(t, copyExample(t, "stock-agent"), "--signing-key", private, "--revision", "v1"), 0o644); err != nil {
		t.Fatal(err)
	}
	// agentd opa is OPA's own command line at the version go.mod pins (go tool opa).
	if code, stdout, stderr := runCLI(t, "opa", "build", "--verification-key", public, "-b", signed, "-o", filepath.Join(dir, "out.tar.gz")); code != 0 {
		t.Fatalf("opa build --verification-key of the signed bundle = %d\n%s%s", code, stdout, stderr)
	}
	tampered := filepath.Join(dir, "tampered.tar.gz")
	data, _ := os.ReadFile(signed)
	if err := os.WriteFile(tampered, tamper(t, data), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "opa", "build", "--verification-key", public, "-b", tampered, "-o", filepath.Join(dir, "out2.tar.gz"))
	if code == 0 || !strings.Contains(stdout+stderr, "digest mismatch") {
		t.Fatalf("opa build of the tampered bundle = %d, want a digest mismatch\n%s%s", code, stdout, stderr)
	}
	if code, _, stderr := runCLI(t, "build", "--output", filepath.Join(dir, "x.tar.gz"), "--revision", "a/b", copyExample(t, "stock-agent")); code != 1 || !strings.Contains(stderr, "bundle_manifest_invalid") {
		t.Fatalf("agentd build --revision a/b = %d\n%s", code, stderr)
	}
}

func TestServeBundle_FlagsAndRefusals(t *testing.T) {
	dir := t.TempDir()
	_, public := rsaKeys(t, dir)
	unsigned := filepath.Join(dir, "unsigned.tar.gz")
	if err := os.WriteFile(unsigned, buildBundle(t, copyExample(t, "stock-agent")), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--config", dir, "--bundle", unsigned}, exitUsage, "give one of --config and --bundle"},
		{[]string{"--config", dir, "--verification-key", public}, exitUsage, "--verification-key goes with --bundle"},
		{[]string{"--bundle", unsigned, "--keep-generations", "0"}, exitUsage, "--keep-generations"},
		{[]string{"--bundle", unsigned, "--verification-key", public}, exitFailed, "bundle_unsigned"},
	}
	for _, c := range cases {
		code, _, stderr := runCLI(t, append([]string{"serve", "--addr", "127.0.0.1:0"}, c.args...)...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("serve %v = %d, want %d with %q\n%s", c.args, code, c.code, c.want, stderr)
		}
	}
}

// bundleServer serves the bundle set last, with an ETag, answering 304 to a matching
// If-None-Match; conditional counts the requests that carried one.
type bundleServer struct {
	*httptest.Server
	mu          sync.Mutex
	data        []byte
	conditional atomic.Int64
}

func newBundleServer(t *testing.T, data []byte) *bundleServer {
	t.Helper()
	s := &bundleServer{data: data}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		data := s.data
		s.mu.Unlock()
		sum := sha256.Sum256(data)
		etag := `"` + hex.EncodeToString(sum[:8]) + `"`
		w.Header().Set("ETag", etag)
		if r.Header.Get("If-None-Match") != "" {
			s.conditional.Add(1)
		}
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		_, _ = w.Write(data)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *bundleServer) serve(data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data = data
}

// bundleStatus is the part of GET /v1/status a bundle test reads.
type bundleStatus struct {
	Generation string `json:"generation"`
	Bundles    map[string]struct {
		Name                     string    `json:"name"`
		ActiveRevision           string    `json:"active_revision"`
		LastSuccessfulActivation time.Time `json:"last_successful_activation"`
		LastSuccessfulDownload   time.Time `json:"last_successful_download"`
		LastRequest              time.Time `json:"last_request"`
		Code                     string    `json:"code"`
		Message                  string    `json:"message"`
	} `json:"bundles"`
}

func (d *daemon) bundleStatus(t *testing.T) bundleStatus {
	t.Helper()
	code, body := d.do(t, http.MethodGet, "/v1/status", "")
	var st bundleStatus
	if err := json.Unmarshal([]byte(body), &st); code != 200 || err != nil {
		t.Fatalf("GET /v1/status = %d %v\n%s", code, err, body)
	}
	return st
}

// waitStatus polls d's status until ok accepts it, for at most 10s.
func (d *daemon) waitStatus(t *testing.T, what string, ok func(bundleStatus) bool) bundleStatus {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := d.bundleStatus(t)
		if ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s; status %+v\n%s", what, st, d.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestServeBundle_OverHTTPNewRevisionsGoLiveTamperedOnesNever(t *testing.T) {
	dir := t.TempDir()
	private, public := rsaKeys(t, dir)
	config := copyExample(t, "stock-agent")
	srv := newBundleServer(t, buildBundle(t, config, "--signing-key", private, "--revision", "v1"))
	d := startDaemon(t, "", "--bundle", srv.URL+"/bundles/agentd.tar.gz", "--verification-key", public, "--bundle-poll", "1s")
	st := d.bundleStatus(t)
	if b := st.Bundles["agentd"]; st.Generation != "v1" || b.ActiveRevision != "v1" || b.LastSuccessfulActivation.IsZero() || b.LastSuccessfulDownload.IsZero() {
		t.Fatalf("status after start: %+v", st)
	}
	if status, body := d.call(t, "/v1/hooks/before_planning", `{"request_id":"b1","request":"quote ACME","metadata":{"tenant":"acme"}}`); status != 200 || body["generation"] != "v1" {
		t.Fatalf("before_planning = %d %v, want 200 on generation v1", status, body)
	}
	d.waitStatus(t, "a conditional poll", func(bundleStatus) bool { return srv.conditional.Load() > 0 })

	srv.serve(tamper(t, buildBundle(t, config, "--signing-key", private, "--revision", "v2")))
	st = d.waitStatus(t, "the tampered bundle refused", func(st bundleStatus) bool { return st.Bundles["agentd"].Code != "" })
	if b := st.Bundles["agentd"]; st.Generation != "v1" || b.ActiveRevision != "v1" || b.Code != "bundle_digest_mismatch" || !strings.Contains(b.Message, ".rego") {
		t.Fatalf("after the tampered bundle: %+v", st)
	}
	doc := apitest.Load(t)
	schema, _ := doc.Response(t, http.MethodGet, "/v1/status", "200")
	_, body := d.do(t, http.MethodGet, "/v1/status", "")
	apitest.Validate(t, "GET /v1/status of a bundle", schema, []byte(body))
	if !strings.Contains(d.stderr.String(), "bundle refused; the last good revision keeps serving") {
		t.Errorf("no log line of the refusal\n%s", d.stderr)
	}
	code, metrics := d.do(t, http.MethodGet, "/metrics", "")
	if code != 200 || !regexp.MustCompile(`agentd_bundle_loads_total\{[^}]*code="bundle_digest_mismatch"`).MatchString(metrics) {
		t.Errorf("/metrics lacks the refusal: %d", code)
	}

	start := time.Now()
	srv.serve(buildBundle(t, config, "--signing-key", private, "--revision", "v3"))
	st = d.waitStatus(t, "v3 live", func(st bundleStatus) bool { return st.Generation == "v3" })
	t.Logf("v3 live %v after it was served", time.Since(start).Round(time.Millisecond))
	if b := st.Bundles["agentd"]; b.ActiveRevision != "v3" || b.Code != "" {
		t.Fatalf("after v3: %+v", st)
	}
	// The request opened on v1 goes on on v1, which the replica keeps.
	if status, body := d.call(t, "/v1/hooks/after_planning", `{"request_id":"b1","plan":`+quotePlan+`}`); status != 200 {
		t.Fatalf("after_planning of a v1 request after v3 went live = %d %v", status, body)
	}
}

// TestReplicas_BundleRevisionsAnswerNoGenerationRetired: two replicas on one Redis
// poll one bundle server while its revision changes every 700ms; requests open on one
// replica and go on on the other. A request that opened on a revision the other
// replica has not fetched yet makes it fetch; none is answered generation_retired.
func TestReplicas_BundleRevisionsAnswerNoGenerationRetired(t *testing.T) {
	config := copyExample(t, "stock-agent")
	revisions := make([][]byte, 6)
	for i := range revisions {
		revisions[i] = buildBundle(t, config, "--revision", fmt.Sprintf("r%d", i+1))
	}
	srv := newBundleServer(t, revisions[0])
	reps := startReplicas(t, "", sharedRedis(t), 2, "--bundle", srv.URL+"/agentd.tar.gz", "--bundle-poll", "1s")
	var requests, retired, failed atomic.Int64
	var firstFailure atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				a, b := reps[(w+i)%2], reps[(w+i+1)%2]
				id := fmt.Sprintf("w%d-%d", w, i)
				calls := []struct {
					d          *daemon
					path, body string
				}{
					{a, "/v1/hooks/before_planning", `{"request_id":"` + id + `","request":"quote ACME","metadata":{"tenant":"acme"}}`},
					{b, "/v1/hooks/after_planning", `{"request_id":"` + id + `","plan":` + quotePlan + `}`},
					{a, "/v1/hooks/after_execution", `{"request_id":"` + id + `","result":{"plan_id":"p1","success":true,"steps":[{"step_id":"step-1","success":true,"response":"42"}]}}`},
					{b, "/v1/hooks/after_synthesis", `{"request_id":"` + id + `","response":"ACME trades at 42"}`},
				}
				requests.Add(1)
				for _, c := range calls {
					status, body, err := c.d.try(http.MethodPost, c.path, c.body)
					switch {
					case err == nil && status == 200:
						continue
					case status == http.StatusConflict && strings.Contains(string(body), "generation_retired"):
						retired.Add(1)
					default:
						failed.Add(1)
						firstFailure.CompareAndSwap(nil, fmt.Sprintf("%s %s = %d %v %s", id, c.path, status, err, body))
					}
					break
				}
			}
		}()
	}
	for _, rev := range revisions[1:] {
		time.Sleep(2 * time.Second) // time for both replicas to poll a revision before the next replaces it
		srv.serve(rev)
	}
	last := fmt.Sprintf("r%d", len(revisions))
	for _, d := range reps {
		d.waitStatus(t, "the last revision live", func(st bundleStatus) bool { return st.Generation == last })
	}
	close(stop)
	wg.Wait()
	t.Logf("%d requests across %d revisions: %d generation_retired, %d other failures", requests.Load(), len(revisions), retired.Load(), failed.Load())
	if retired.Load() != 0 || failed.Load() != 0 {
		t.Fatalf("%d generation_retired, %d other failures; first: %v", retired.Load(), failed.Load(), firstFailure.Load())
	}
	if requests.Load() < 20 {
		t.Fatalf("only %d requests ran", requests.Load())
	}
}
