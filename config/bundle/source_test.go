package bundle

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	opastatus "github.com/open-policy-agent/opa/v1/plugins/bundle"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/config/reload"
)

// bundleServer serves one bundle at a time with a strong ETag, answering 304 to a
// matching If-None-Match, and records the If-None-Match of every request.
type bundleServer struct {
	*httptest.Server
	mu          sync.Mutex
	data        []byte
	ifNoneMatch []string
}

func newBundleServer(t *testing.T, data []byte) *bundleServer {
	s := &bundleServer{data: data}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		data := s.data
		s.ifNoneMatch = append(s.ifNoneMatch, r.Header.Get("If-None-Match"))
		s.mu.Unlock()
		sum := sha256.Sum256(data)
		etag := `"` + hex.EncodeToString(sum[:8]) + `"`
		w.Header().Set("ETag", etag)
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

func (s *bundleServer) lastIfNoneMatch() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ifNoneMatch[len(s.ifNoneMatch)-1]
}

// replica is one registry kept live by a source of url.
func replica(t *testing.T, url string, open OpenOptions, poll time.Duration) (*reload.Registry, *Source) {
	t.Helper()
	reg := reload.NewRegistry(4)
	src, err := NewSource(SourceOptions{Location: url, Open: open, Poll: poll}, reg, config.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src.Close() })
	return reg, src
}

func TestSource_HTTPRevisionsGoLiveATamperedOneNever(t *testing.T) {
	k := newKeys(t, "RS256")
	ctx := context.Background()
	srv := newBundleServer(t, build(t, example, BuildOptions{Revision: "r1", Signing: k.signing()}))
	reg, src := replica(t, srv.URL+"/bundles/agentd.tar.gz", k.openOptions(t), 0)
	if err := src.Update(ctx); err != nil {
		t.Fatal(err)
	}
	if g := reg.Current(); g == nil || g.ID != "r1" {
		t.Fatalf("live generation %v, want r1", g)
	}
	if err := src.Update(ctx); err != nil || srv.lastIfNoneMatch() == "" {
		t.Fatalf("second fetch: %v, If-None-Match %q: want a conditional request", err, srv.lastIfNoneMatch())
	}

	tampered := rewrite(t, build(t, example, BuildOptions{Revision: "r2", Signing: k.signing()}), func(es []entry) []entry {
		for i := range es {
			if strings.HasSuffix(es[i].name, ".rego") {
				es[i].data = append(bytes.Clone(es[i].data), ' ')
				break
			}
		}
		return es
	})
	srv.serve(tampered)
	if err := src.Update(ctx); KindOf(err) != KindDigest {
		t.Fatalf("tampered bundle: %v, want %s", err, KindDigest)
	}
	st := src.Status()
	if reg.Current().ID != "r1" || st.ActiveRevision != "r1" || st.Code != string(KindDigest) || !strings.Contains(st.Message, ".rego") {
		t.Fatalf("after the tampered bundle: live %s, status %+v", reg.Current().ID, st)
	}
	var opa opastatus.Status
	raw, _ := json.Marshal(st)
	if err := json.Unmarshal(raw, &opa); err != nil || opa.Name != "agentd" || opa.ActiveRevision != "r1" || opa.Code != st.Code || opa.LastSuccessfulActivation.IsZero() {
		t.Fatalf("OPA's status type reads %+v (%v) from %s", opa, err, raw)
	}

	srv.serve(build(t, example, BuildOptions{Revision: "r2", Signing: k.signing()}))
	if err := src.Update(ctx); err != nil {
		t.Fatal(err)
	}
	if reg.Current().ID != "r2" || reg.Get("r1") == nil || src.Status().Code != "" {
		t.Fatalf("after r2: live %s, r1 retained %v, status %+v", reg.Current().ID, reg.Get("r1") != nil, src.Status())
	}
}

func TestSource_ConfigErrorsKeepTheBundlesFileNames(t *testing.T) {
	srv := newBundleServer(t, build(t, example, BuildOptions{Revision: "r1"}))
	reg, src := replica(t, srv.URL, OpenOptions{}, 0)
	if err := src.Update(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv.serve(rewrite(t, build(t, example, BuildOptions{Revision: "r2"}), func(es []entry) []entry {
		for i := range es {
			if es[i].name == "/hooks/20-plan.yaml" {
				es[i].data = append(bytes.Clone(es[i].data), "  - name: broken\n    stage: nowhere\n"...)
			}
		}
		return es
	}))
	err := src.Update(context.Background())
	if KindOf(err) != KindActivation || !strings.Contains(src.Status().Message, "hooks/20-plan.yaml:") {
		t.Fatalf("broken hook: %v; status message %q", err, src.Status().Message)
	}
	if reg.Current().ID != "r1" {
		t.Fatalf("live %s after a broken bundle, want r1", reg.Current().ID)
	}
}

func TestSource_ARevisionReusedForOtherContentIsRefused(t *testing.T) {
	srv := newBundleServer(t, build(t, example, BuildOptions{Revision: "r1"}))
	reg, src := replica(t, srv.URL, OpenOptions{}, 0)
	if err := src.Update(context.Background()); err != nil {
		t.Fatal(err)
	}
	live := reg.Current().Digest
	dir := copyConfig(t, example)
	if err := (&Archive{Files: []config.SourceFile{{Name: "data/agentd/limits.json", Data: []byte(`{"limits": {"max_steps": 3}}`)}}}).WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	srv.serve(build(t, dir, BuildOptions{Revision: "r1"}))
	if err := src.Update(context.Background()); KindOf(err) != KindRevisionConflict {
		t.Fatalf("r1 with other content: %v, want %s", err, KindRevisionConflict)
	}
	if g := reg.Current(); g.Digest != live {
		t.Fatalf("live content changed under revision r1: %s, was %s", g.Digest, live)
	}
}

// TestSource_AReplicaFetchesTheRevisionARequestOpenedOn: replica a runs r2 while b
// still runs r1; a request that opened on r2 reaches b, which fetches r2 on the miss.
func TestSource_AReplicaFetchesTheRevisionARequestOpenedOn(t *testing.T) {
	srv := newBundleServer(t, build(t, example, BuildOptions{Revision: "r1"}))
	regA, srcA := replica(t, srv.URL, OpenOptions{}, 0)
	regB, srcB := replica(t, srv.URL, OpenOptions{}, 0)
	for _, s := range []*Source{srcA, srcB} {
		if err := s.Update(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	srv.serve(build(t, example, BuildOptions{Revision: "r2"}))
	if err := srcA.Update(context.Background()); err != nil || regA.Current().ID != "r2" {
		t.Fatalf("a: %v", err)
	}
	time.Sleep(missInterval) // b's last fetch is older than the miss interval
	if g := regB.Lookup("r2"); g == nil || g.ID != "r2" {
		t.Fatalf("b.Lookup(r2) = %v, want the generation fetched on the miss", g)
	}
	if regB.Lookup("r1") == nil {
		t.Error("b retired r1, which requests may still run on")
	}
}

func TestSource_RunPollsUntilANewRevisionIsLive(t *testing.T) {
	srv := newBundleServer(t, build(t, example, BuildOptions{Revision: "r1"}))
	reg, src := replica(t, srv.URL, OpenOptions{}, 20*time.Millisecond)
	if err := src.Update(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { src.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	srv.serve(build(t, example, BuildOptions{Revision: "r2"}))
	deadline := time.Now().Add(10 * time.Second)
	for reg.Current().ID != "r2" {
		if time.Now().After(deadline) {
			t.Fatalf("r2 not live after 10s; status %+v", src.Status())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestSource_AFileBundle(t *testing.T) {
	path := t.TempDir() + "/agentd.tgz"
	write := func(data []byte) {
		if err := writeFileAtomic(path, data); err != nil {
			t.Fatal(err)
		}
	}
	write(build(t, example, BuildOptions{Revision: "r1"}))
	reg, src := replica(t, path, OpenOptions{}, 0)
	if err := src.Update(context.Background()); err != nil || reg.Current().ID != "r1" || src.Name() != "agentd" {
		t.Fatalf("file bundle: %v, name %q", err, src.Name())
	}
	write(build(t, example, BuildOptions{Revision: "r2"}))
	if err := src.Update(context.Background()); err != nil || reg.Current().ID != "r2" {
		t.Fatalf("file bundle r2: %v", err)
	}
}
