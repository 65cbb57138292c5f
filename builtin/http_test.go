package builtin_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
)

// seenRequest is what the test server received.
type seenRequest struct {
	method, path, rawQuery, q, body, requestID, apiKey, contentType string
}

// contextServer is an httptest server on loopback that records every request and
// answers from a route table: path → handler.
type contextServer struct {
	*httptest.Server
	mu   sync.Mutex
	seen []seenRequest
}

func newContextServer(t *testing.T) *contextServer {
	t.Helper()
	s := &contextServer{}
	mux := http.NewServeMux()
	mux.HandleFunc("/ctx", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "docs for "+r.URL.Query().Get("q"))
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		io.WriteString(w, "got "+string(b))
	})
	mux.HandleFunc("/fail", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "boom", http.StatusInternalServerError)
	})
	mux.HandleFunc("/missing", http.NotFound)
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Repeat("x", 100))
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	mux.HandleFunc("/lazy", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(100 * time.Millisecond)
		io.WriteString(w, "late but fine")
	})
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.seen = append(s.seen, seenRequest{
			method: r.Method, path: r.URL.Path, rawQuery: r.URL.RawQuery, q: r.URL.Query().Get("q"),
			body: string(b), requestID: r.Header.Get("X-Request-Id"), apiKey: r.Header.Get("X-Api-Key"),
			contentType: r.Header.Get("Content-Type"),
		})
		s.mu.Unlock()
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *contextServer) requests() []seenRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seenRequest(nil), s.seen...)
}

// retrieveHooks is a hooks section with the retrieve hook (params as given) followed by
// a hook that always runs, to show that failures fail open.
func retrieveHooks(params string) string {
	return hooks(`hooks:
  - name: retrieve
    stage: before_planning
    steps:
      - http.retrieve: ` + params + `
  - name: after
    stage: before_planning
    steps:
      - enrich: {key: after, value: "'ran'"}
`)
}

func TestHTTPRetrieve_Requests(t *testing.T) {
	srv := newContextServer(t)
	tests := []struct {
		name   string
		params string
		want   string // the rag_context enrichment
		seen   seenRequest
	}{
		{
			name:   "GET sends the request text as q",
			params: `{url: "` + srv.URL + `/ctx", key: rag_context, headers: {X-Api-Key: k1}}`,
			want:   "docs for price of ACME & co?",
			seen:   seenRequest{method: "GET", path: "/ctx", rawQuery: "q=price+of+ACME+%26+co%3F", q: "price of ACME & co?", requestID: "req-7", apiKey: "k1"},
		},
		{
			name:   "GET keeps an existing query",
			params: `{url: "` + srv.URL + `/ctx?src=docs", key: rag_context, method: GET}`,
			want:   "docs for price of ACME & co?",
			seen:   seenRequest{method: "GET", path: "/ctx", rawQuery: "src=docs&q=price+of+ACME+%26+co%3F", q: "price of ACME & co?", requestID: "req-7"},
		},
		{
			name:   "POST sends the request text by default",
			params: `{url: "` + srv.URL + `/echo", key: rag_context, method: POST}`,
			want:   "got price of ACME & co?",
			seen:   seenRequest{method: "POST", path: "/echo", body: "price of ACME & co?", requestID: "req-7"},
		},
		{
			name:   "POST with a CEL body",
			params: `{url: "` + srv.URL + `/echo", key: rag_context, method: POST, body: "'{\"tenant\": \"' + string(metadata.tenant) + '\"}'", headers: {Content-Type: application/json}}`,
			want:   `got {"tenant": "acme"}`,
			seen:   seenRequest{method: "POST", path: "/echo", body: `{"tenant": "acme"}`, requestID: "req-7", contentType: "application/json"},
		},
		{
			name:   "a body of exactly max_bytes",
			params: `{url: "` + srv.URL + `/big", key: rag_context, max_bytes: 100}`,
			want:   strings.Repeat("x", 100),
			seen:   seenRequest{method: "GET", path: "/big", rawQuery: "q=price+of+ACME+%26+co%3F", q: "price of ACME & co?", requestID: "req-7"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(srv.requests())
			gen := loadHooks(t, retrieveHooks(tt.params))
			r := runBefore(t, gen, "req-7", "price of ACME & co?", map[string]any{"tenant": "acme"}, noGate)
			if r.out != nil || r.err != nil {
				t.Fatalf("BeforePlanning = %+v, %v", r.out, r.err)
			}
			wantInvocations(t, r.invs, 2)
			wantInvocation(t, r.invs[0], "retrieve", engine.InvocationSucceeded, engine.ReasonNoDecision, "")
			if got := r.pctx.Enrichments["rag_context"]; got != tt.want {
				t.Errorf("rag_context = %q, want %q", got, tt.want)
			}
			seen := srv.requests()[before:]
			if len(seen) != 1 || seen[0] != tt.seen {
				t.Errorf("server saw %+v, want %+v", seen, tt.seen)
			}
		})
	}
}

// Every failure is a hook error: the enrichment is not set and the next hook runs.
func TestHTTPRetrieve_FailuresFailOpen(t *testing.T) {
	srv := newContextServer(t)
	tests := []struct {
		name, params, errPart string
		maxDuration           time.Duration
	}{
		{"500", `{url: "` + srv.URL + `/fail", key: rag_context}`, "answered 500 Internal Server Error", 0},
		{"404", `{url: "` + srv.URL + `/missing", key: rag_context}`, "answered 404 Not Found", 0},
		{"timeout", `{url: "` + srv.URL + `/slow", key: rag_context, timeout: 50ms}`, "context deadline exceeded", 2 * time.Second},
		{"body over max_bytes", `{url: "` + srv.URL + `/big", key: rag_context, max_bytes: 99}`, "exceeds 99 bytes", 0},
		{"connection refused", `{url: "http://127.0.0.1:1/ctx", key: rag_context}`, "http.retrieve: ", 0},
		{"body fails to evaluate", `{url: "` + srv.URL + `/echo", key: rag_context, method: POST, body: "string(metadata.nope)"}`, "http.retrieve body: ", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gen := loadHooks(t, retrieveHooks(tt.params))
			start := time.Now()
			r := runBefore(t, gen, "req-1", "q", map[string]any{"rag_context": "from metadata"}, noGate)
			if r.out != nil || r.err != nil {
				t.Fatalf("BeforePlanning = %+v, %v", r.out, r.err)
			}
			if tt.maxDuration > 0 && time.Since(start) > tt.maxDuration {
				t.Errorf("took %s, want the timeout to cut it short", time.Since(start))
			}
			wantInvocations(t, r.invs, 2)
			wantInvocation(t, r.invs[0], "retrieve", engine.InvocationFailed, engine.ReasonHookError, tt.errPart)
			if d := r.invs[0].Decision; d.FailurePolicy != engine.FailOpen || d.Action != engine.ActionContinue {
				t.Errorf("decision = %+v, want fail_open/continue", d)
			}
			wantInvocation(t, r.invs[1], "after", engine.InvocationSucceeded, engine.ReasonNoDecision, "")
			if got := r.pctx.Enrichments["rag_context"]; got != "from metadata" {
				t.Errorf("rag_context = %q, want the promoted value kept", got)
			}
		})
	}
}

func TestHTTPRetrieve_URLMustBeHTTP(t *testing.T) {
	for _, url := range []string{"ftp://example.com/x", "/relative", "http://"} {
		t.Run(url, func(t *testing.T) {
			_, err := config.Load(writeConfig(t, map[string]string{"hooks/test.yaml": retrieveHooks(`{url: "` + url + `", key: k}`)}), config.Options{})
			list := wantLoadErrors(t, err, "invalid_params")
			if e := list[0]; e.Line != 8 || !strings.Contains(e.Message, "absolute http or https URL") {
				t.Errorf("error = %v", e)
			}
		})
	}
}

// A redirect to another origin would take the configured headers and the user's text
// to a host the config never named: it is refused (a hook error, fail open), and the
// other host sees nothing. A redirect within the origin is followed.
func TestHardening_RetrieveRefusesCrossOriginRedirects(t *testing.T) {
	var leaked []string
	var mu sync.Mutex
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		leaked = append(leaked, r.Header.Get("X-Api-Key")+" "+r.URL.RawQuery)
		mu.Unlock()
		io.WriteString(w, "attacker context")
	}))
	defer elsewhere.Close()
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, elsewhere.URL+"/steal?"+r.URL.RawQuery, http.StatusFound)
		case "/moved":
			http.Redirect(w, r, "/here?"+r.URL.RawQuery, http.StatusMovedPermanently)
		default:
			io.WriteString(w, "docs for "+r.URL.Query().Get("q"))
		}
	}))
	defer origin.Close()
	gen := loadHooks(t, hooks(`hooks:
  - name: away
    stage: before_planning
    steps:
      - http.retrieve: {url: "`+origin.URL+`/away", key: rag_context, headers: {X-Api-Key: secret}}
  - name: moved
    stage: before_planning
    steps:
      - http.retrieve: {url: "`+origin.URL+`/moved", key: conversation_history}
`))
	r := runBefore(t, gen, "req", "my account number", nil, noGate)
	wantInvocation(t, r.invs[0], "away", engine.InvocationFailed, engine.ReasonHookError, "refused a redirect to another origin")
	if len(leaked) != 0 {
		t.Fatalf("the other host received %q", leaked)
	}
	if got := r.pctx.Enrichments["conversation_history"]; got != "docs for my account number" {
		t.Fatalf("same-origin redirect: enrichment = %v", got)
	}
}

// block_private refuses loopback, private and link-local addresses, whatever the URL
// names: the address dialled is checked.
func TestHardening_RetrieveBlocksPrivateAddresses(t *testing.T) {
	kb := newContextServer(t)
	host := strings.Replace(kb.URL, "127.0.0.1", "localhost", 1)
	gen := loadHooks(t, hooks(`hooks:
  - name: by-ip
    stage: before_planning
    steps:
      - http.retrieve: {url: "`+kb.URL+`/ctx", key: rag_context, block_private: true}
  - name: by-name
    stage: before_planning
    steps:
      - http.retrieve: {url: "`+host+`/ctx", key: user_profile, block_private: true}
`))
	r := runBefore(t, gen, "req", "q", nil, noGate)
	for i, name := range []string{"by-ip", "by-name"} {
		wantInvocation(t, r.invs[i], name, engine.InvocationFailed, engine.ReasonHookError, "not a public address")
	}
	if n := len(kb.requests()); n != 0 {
		t.Fatalf("the private server received %d requests", n)
	}
}
