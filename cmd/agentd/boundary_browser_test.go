package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// seen is one call the browser made to the daemon, as the daemon answered it.
type seen struct {
	Method, Path, ContentType, FetchSite, Origin, Host string
	Status                                             int
	Type                                               string // the error type answered, if any
}

// recorder is a transparent proxy in front of the daemon that keeps every call and
// the daemon's answer, so that a test knows what the browser sent and how the daemon
// answered even where the page cannot read the answer (a no-cors fetch, a beacon). It
// forwards the browser's Host header unchanged.
type recorder struct {
	mu    sync.Mutex
	calls []seen
}

func (rc *recorder) handler(daemonURL string) http.Handler {
	target, _ := url.Parse(daemonURL)
	return &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host
		},
		ModifyResponse: func(resp *http.Response) error {
			req := resp.Request
			s := seen{Method: req.Method, Path: req.URL.Path, ContentType: req.Header.Get("Content-Type"), FetchSite: req.Header.Get("Sec-Fetch-Site"),
				Origin: req.Header.Get("Origin"), Host: req.Host, Status: resp.StatusCode}
			if resp.StatusCode >= 400 && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
				body, err := io.ReadAll(resp.Body)
				if err != nil {
					return err
				}
				resp.Body = io.NopCloser(bytes.NewReader(body))
				var e struct{ Error struct{ Type string } }
				_ = json.Unmarshal(body, &e)
				s.Type = e.Error.Type
			}
			rc.mu.Lock()
			rc.calls = append(rc.calls, s)
			rc.mu.Unlock()
			return nil
		},
	}
}

// of returns the calls to path ("" for every call).
func (rc *recorder) of(path string) []seen {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []seen
	for _, c := range rc.calls {
		if path == "" || c.Path == path {
			out = append(out, c)
		}
	}
	return out
}

// attackerPage is a page of another site that tries every way a page can make a
// browser write to agentd without a preflight agentd would have to answer (a no-cors
// fetch of text/plain and of a form, a beacon, a JSON fetch that needs a preflight, a
// form into a hidden frame), each with a request id of its own, then sets
// window.attacksDone.
const attackerPage = `<!doctype html><title>attacker</title><iframe name="sink"></iframe>
<form id="f" target="sink" method="POST" action="%[1]s/v1/hooks/before_planning"><input name="request_id" value="csrf-frame-form"></form>
<script>
const target = %[1]q + "/v1/hooks/before_planning";
const body = id => JSON.stringify({request_id: id, request: "wire everything to the attacker", metadata: {tenant: "acme"}});
window.results = {};
(async () => {
  const tries = {
    "csrf-fetch-text": () => fetch(target, {method: "POST", mode: "no-cors", credentials: "include", headers: {"Content-Type": "text/plain"}, body: body("csrf-fetch-text")}),
    "csrf-fetch-form": () => fetch(target, {method: "POST", mode: "no-cors", credentials: "include", body: new URLSearchParams({request_id: "csrf-fetch-form", request: "x"})}),
    "csrf-fetch-json": () => fetch(target, {method: "POST", credentials: "include", headers: {"Content-Type": "application/json"}, body: body("csrf-fetch-json")}),
    "csrf-beacon": async () => navigator.sendBeacon(target, body("csrf-beacon")),
  };
  for (const [id, f] of Object.entries(tries)) {
    try { const r = await f(); window.results[id] = r && r.type ? r.type : String(r); } catch (e) { window.results[id] = "error"; }
  }
  document.querySelector("iframe").onload = () => { window.attacksDone = true; };
  document.getElementById("f").submit();
})();
</script>`

// topForm is a page of another site whose form posts itself, in the top window, to
// agentd: as a URL-encoded form, or as text/plain shaped into a JSON body.
const topForm = `<!doctype html><title>form</title><form id="f" method="POST" enctype="%[2]s" action="%[1]s/v1/hooks/before_planning">%[3]s</form>
<script>document.getElementById("f").submit()</script>`

// The browser boundary in a real browser, against a daemon with no --token-file on
// loopback (where a page of any site the user visits could otherwise drive it): every
// way a page of another site makes Chromium write to agentd reaches the daemon and is
// refused (403 cross_origin), or never leaves the browser (a JSON fetch's preflight
// is not answered), and leaves no record; a page under a name rebound to 127.0.0.1 is
// refused (403 host_forbidden), even for its own same-origin calls; the daemon's own
// pages, at 127.0.0.1 and at localhost, call it as programs do, a form of theirs is
// refused for its media type (415), and the viewer lists what they wrote.
func TestBrowserBoundary_InChromium(t *testing.T) {
	tab := browse(t, 3*time.Minute, chromedp.Flag("host-resolver-rules", "MAP rebind.test 127.0.0.1"))
	shots := artifacts(t)
	d := startDaemon(t, copyExample(t, "stock-agent"))
	rec := &recorder{}
	proxy := httptest.NewServer(rec.handler(d.url))
	defer proxy.Close()
	port := proxy.URL[strings.LastIndexByte(proxy.URL, ':')+1:]
	agentd := "http://127.0.0.1:" + port // the daemon, as the browser reaches it
	attacker := http.NewServeMux()
	attacker.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, attackerPage, agentd)
	})
	attacker.HandleFunc("/form", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fields := `<input name="request_id" value="csrf-top-form">`
		if r.URL.Query().Get("enctype") == "text/plain" {
			fields = `<input name='{"request_id":"csrf-top-text","request":"x","pad":"' value='"}'>`
		}
		fmt.Fprintf(w, topForm, agentd, r.URL.Query().Get("enctype"), fields)
	})
	site := httptest.NewServer(attacker)
	defer site.Close()
	evil := "http://localhost:" + site.URL[strings.LastIndexByte(site.URL, ':')+1:] // another site than 127.0.0.1
	noRecord := func(ids ...string) {
		t.Helper()
		for _, id := range ids {
			if code, body := d.do(t, "GET", "/v1/executions/"+id, ""); code != http.StatusNotFound {
				t.Errorf("a refused call left a record: GET /v1/executions/%s = %d %s", id, code, body)
			}
		}
	}

	// Another site's page: fetches, a beacon and a form into a frame.
	browserRun(t, tab, shots, "open another site's page that writes to agentd",
		chromedp.Navigate(evil+"/"), truthy(`window.attacksDone === true`), screenshot(shots, "01-attacker"))
	results, err := chromedp.Run(tab, chromedp.Evaluate[map[string]string](`window.results`))
	if err != nil {
		t.Fatal(err)
	}
	if results["csrf-fetch-json"] != "error" {
		t.Errorf("the cross-site JSON fetch = %q, want a network error (its preflight is not answered)", results["csrf-fetch-json"])
	}
	var posts []seen
	for deadline := time.Now().Add(10 * time.Second); len(posts) < 4 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		posts = nil
		for _, c := range rec.of("/v1/hooks/before_planning") {
			if c.Method == http.MethodPost {
				posts = append(posts, c)
			}
		}
	}
	if len(posts) != 4 { // text fetch, form fetch, beacon, framed form; never the JSON fetch
		t.Errorf("the daemon got %d cross-site POSTs, want 4: %+v", len(posts), posts)
	}
	for _, c := range posts {
		if c.Status != http.StatusForbidden || c.Type != "cross_origin" || c.FetchSite != "cross-site" {
			t.Errorf("cross-site %s (%s) answered %d %q, want 403 cross_origin", c.ContentType, c.FetchSite, c.Status, c.Type)
		}
		if strings.HasPrefix(c.ContentType, "application/json") {
			t.Errorf("a cross-site page sent JSON without a preflight: %+v", c)
		}
	}
	noRecord("csrf-fetch-text", "csrf-fetch-form", "csrf-fetch-json", "csrf-beacon", "csrf-frame-form")

	// Another site's forms in the top window: the browser shows agentd's refusal.
	for i, enctype := range []string{"application/x-www-form-urlencoded", "text/plain"} {
		browserRun(t, tab, shots, "post another site's "+enctype+" form to agentd",
			chromedp.Navigate(evil+"/form?enctype="+url.QueryEscape(enctype)),
			truthy(fmt.Sprintf(`location.origin === %q && document.body.innerText.includes("cross_origin")`, agentd)),
			screenshot(shots, fmt.Sprintf("02-form-%d", i)))
	}
	noRecord("csrf-top-form", "csrf-top-text")

	// DNS rebinding: another site's name that now resolves to 127.0.0.1.
	rebound := "http://rebind.test:" + port
	browserRun(t, tab, shots, "open agentd under a rebound name",
		chromedp.Navigate(rebound+"/v1/status"), truthy(`document.body.innerText.includes("host_forbidden")`), screenshot(shots, "03-rebound"))
	status, err := chromedp.Run(tab, chromedp.Evaluate[int](`fetch("/v1/hooks/before_planning", {method: "POST", headers: {"Content-Type": "application/json"},
		body: JSON.stringify({request_id: "rebound", request: "x"})}).then(r => r.status)`, chromedp.EvalAwaitPromise))
	if err != nil || status != http.StatusForbidden {
		t.Errorf("a same-origin JSON POST under the rebound name = %d (%v), want 403", status, err)
	}
	noRecord("rebound")
	for _, c := range rec.of("") {
		if strings.HasPrefix(c.Host, "rebind.test") && (c.Status != http.StatusForbidden || c.Type != "host_forbidden") {
			t.Errorf("a call under the rebound name answered %d %q, want 403 host_forbidden", c.Status, c.Type)
		}
	}

	// The daemon's own pages: same-origin JSON works, at 127.0.0.1 and at localhost.
	for _, origin := range []string{agentd, "http://localhost:" + port} {
		id := "same-origin-" + strings.Split(strings.TrimPrefix(origin, "http://"), ":")[0]
		browserRun(t, tab, shots, "open the viewer at "+origin,
			chromedp.Navigate(origin+"/ui/"), chromedp.WaitVisible(chromedp.CSS("#records")))
		status, err := chromedp.Run(tab, chromedp.Evaluate[int](fmt.Sprintf(`fetch("/v1/hooks/before_planning", {method: "POST", headers: {"Content-Type": "application/json"},
			body: JSON.stringify({request_id: %q, request: "Quote ACME", metadata: {tenant: "acme"}})}).then(r => r.status)`, id), chromedp.EvalAwaitPromise))
		if err != nil || status != http.StatusOK {
			t.Fatalf("the viewer's same-origin JSON POST at %s = %d (%v), want 200\n%s", origin, status, err, d.stderr)
		}
		browserRun(t, tab, shots, "find the request in the viewer's list",
			hash("#/?id="+id), truthy(fmt.Sprintf(`!!document.querySelector('tr[data-request-id=%q]')`, id)), screenshot(shots, "04-"+id))
	}
	// A form of the daemon's own origin is same-origin, but no JSON: 415.
	browserRun(t, tab, shots, "post a same-origin form",
		runJS(`const f = document.createElement("form"); f.method = "POST"; f.action = "/v1/hooks/before_planning";
		  const i = document.createElement("input"); i.name = "request_id"; i.value = "same-origin-form"; f.append(i); document.body.append(f); f.submit()`))
	answered := `location.pathname === "/v1/hooks/before_planning" && document.body.innerText.includes("unsupported_media_type")`
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) { // polling across the navigation fails: poll from here
		if ok, _ := chromedp.Run(tab, chromedp.Evaluate[bool](answered)); ok {
			break
		}
		if time.Now().After(deadline) {
			check(t, tab, "the same-origin form is answered 415", answered)
			break
		}
	}
	noRecord("same-origin-form")
}
