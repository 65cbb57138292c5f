package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/engine/store/redis/redistest"
)

// The fault tests put agentd on a private Redis and break it: stopped before the
// daemon starts, killed mid-run, silent (a proxy swallows every byte) and slow (a proxy
// delays every reply past the cache budget but within the state budget). For every
// hook kind they check the outcome — optional hooks fail open, the required plan
// review decides correctly or fails closed, a call that needs state it cannot read is
// a 503 store_unavailable — and that the daemon recovers without a restart. The
// observed outcomes are logged as the fault matrix.

// faultProxy is a loopback TCP proxy in front of Redis that passes traffic, delays
// every reply by delay, or swallows everything in both directions (blackhole).
type faultProxy struct {
	ln       net.Listener
	upstream string

	mu        sync.Mutex
	delay     time.Duration
	blackhole bool
	conns     map[net.Conn]struct{}
	wg        sync.WaitGroup
}

func startProxy(t *testing.T, upstream string) *faultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{ln: ln, upstream: upstream, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(p.close)
	return p
}

// url is the redis:// URL of the proxy with the query options query.
func (p *faultProxy) url(query string) string {
	return "redis://" + p.ln.Addr().String() + "/0?" + query
}

// set switches the proxy's behaviour for every connection, open or new.
func (p *faultProxy) set(delay time.Duration, blackhole bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay, p.blackhole = delay, blackhole
}

func (p *faultProxy) mode() (time.Duration, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.delay, p.blackhole
}

func (p *faultProxy) serve() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.upstream)
		if err != nil {
			client.Close()
			continue
		}
		if !p.track(client, server) {
			return
		}
		p.wg.Add(2)
		go p.pump(server, client, false)
		go p.pump(client, server, true)
	}
}

func (p *faultProxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

// pump copies src to dst until either closes; replies (src = Redis) are delayed.
func (p *faultProxy) pump(dst, src net.Conn, reply bool) {
	defer p.wg.Done()
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if err != nil {
			return
		}
		delay, blackhole := p.mode()
		if blackhole {
			continue
		}
		if reply && delay > 0 {
			time.Sleep(delay)
		}
		if _, err := dst.Write(buf[:n]); err != nil {
			return
		}
	}
}

func (p *faultProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}

// observed is one answer of the daemon.
type observed struct {
	status int
	body   map[string]any
	took   time.Duration
}

func (d *daemon) observe(t *testing.T, method, path, body string) observed {
	t.Helper()
	start := time.Now()
	status, data, err := d.try(method, path, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("%s %s answered %d with non-JSON %q", method, path, status, data)
	}
	return observed{status, out, time.Since(start)}
}

func (o observed) errType() string {
	e, _ := o.body["error"].(map[string]any)
	s, _ := e["type"].(string)
	return s
}

// invocation is the status and decision reason of hook's invocation in the answer.
func (o observed) invocation(hook string) string {
	list, _ := o.body["invocations"].([]any)
	for _, v := range list {
		inv, _ := v.(map[string]any)
		if inv["hook_name"] == hook {
			dec, _ := inv["decision"].(map[string]any)
			return fmt.Sprintf("%v/%v", inv["status"], dec["reason"])
		}
	}
	return "absent"
}

func (o observed) shortCircuit() string {
	sc, _ := o.body["short_circuit"].(map[string]any)
	if sc == nil {
		return ""
	}
	return fmt.Sprint(sc["source"])
}

// String summarizes a non-200 answer as "status type".
func (o observed) String() string {
	if o.status == http.StatusOK {
		return "200"
	}
	return fmt.Sprintf("%d %s", o.status, o.errType())
}

// faultProbe exercises one hook kind on request id. Under a slow Redis (slow) it
// checks the kind's own outcome; otherwise the store cannot be read at all and the
// only acceptable answer is 503 store_unavailable.
type faultProbe struct {
	kind string
	run  func(t *testing.T, d *daemon, id string, slow bool) (outcome string, problem error)
}

// unavailable is the check for a fault where no state can be read or written.
func unavailable(o observed) (string, error) {
	if o.status != http.StatusServiceUnavailable || o.errType() != "store_unavailable" {
		return o.String(), fmt.Errorf("answered %d %v, want 503 store_unavailable", o.status, o.body)
	}
	return fmt.Sprintf("503 store_unavailable (%s)", o.took.Round(time.Millisecond)), nil
}

func problemIf(cond bool, format string, args ...any) error {
	if cond {
		return fmt.Errorf(format, args...)
	}
	return nil
}

var faultProbes = []faultProbe{
	{"cache.lookup (optional, before_planning)", func(t *testing.T, d *daemon, id string, slow bool) (string, error) {
		o := d.observe(t, "POST", "/v1/hooks/before_planning", `{"request_id":"`+id+`","request":"cached question","metadata":{"tenant":"t1"}}`)
		if !slow {
			return unavailable(o)
		}
		inv := o.invocation("response-cache")
		return fmt.Sprintf("200, fails open: lookup %s, no cached answer served", inv),
			problemIf(o.status != 200 || inv != "failed/hook_error" || o.shortCircuit() != "", "answered %d %s, short circuit %q", o.status, inv, o.shortCircuit())
	}},
	{"enrich (optional, before_planning)", func(t *testing.T, d *daemon, id string, slow bool) (string, error) {
		o := d.observe(t, "POST", "/v1/hooks/before_planning", `{"request_id":"`+id+`","request":"fresh question","metadata":{"tenant":"t1"}}`)
		if !slow {
			return unavailable(o)
		}
		enr, _ := o.body["enrichments"].(map[string]any)
		inv := o.invocation("tenant-context")
		return fmt.Sprintf("200, enrichment %s", inv),
			problemIf(o.status != 200 || inv != "succeeded/no_decision" || enr["rag_context"] != "Tenant: t1", "answered %d %s %v", o.status, inv, enr)
	}},
	{"rate_limit (optional, before_planning; quota used up)", func(t *testing.T, d *daemon, id string, slow bool) (string, error) {
		o := d.observe(t, "POST", "/v1/hooks/before_planning", `{"request_id":"`+id+`","request":"one more","metadata":{"quota":"spent"}}`)
		if !slow {
			return unavailable(o)
		}
		inv := o.invocation("tenant-quota")
		return fmt.Sprintf("200, fails open: limit %s, call let through", inv),
			problemIf(o.status != 200 || inv != "failed/hook_error" || o.shortCircuit() != "", "answered %d %s, short circuit %q", o.status, inv, o.shortCircuit())
	}},
	{"plan.set_metadata (optional, after_planning)", func(t *testing.T, d *daemon, id string, slow bool) (string, error) {
		o := d.observe(t, "POST", "/v1/hooks/after_planning", `{"request_id":"`+id+`","request":"quote","plan":`+quotePlan+`}`)
		if !slow {
			return unavailable(o)
		}
		inv := o.invocation("context-stamp")
		return fmt.Sprintf("200, mutation %s", inv), problemIf(o.status != 200 || inv != "succeeded/accepted", "answered %d %s %v", o.status, inv, o.body)
	}},
	{"required plan review, allowed plan", func(t *testing.T, d *daemon, id string, slow bool) (string, error) {
		o := d.observe(t, "POST", "/v1/hooks/after_planning", `{"request_id":"`+id+`","request":"quote","plan":`+quotePlan+`}`)
		if !slow {
			return unavailable(o)
		}
		inv := o.invocation("allowed-operations")
		return fmt.Sprintf("200 plan accepted (review %s)", inv), problemIf(o.status != 200 || inv != "succeeded/accepted", "answered %d %s %v", o.status, inv, o.body)
	}},
	{"required plan review, forbidden plan", func(t *testing.T, d *daemon, id string, slow bool) (string, error) {
		o := d.observe(t, "POST", "/v1/hooks/after_planning", `{"request_id":"`+id+`","request":"buy","plan":`+tradePlan+`}`)
		if !slow {
			return unavailable(o)
		}
		return o.String() + " (plan rejected)", problemIf(o.status != 403 || o.errType() != "required_after_planning", "answered %d %v", o.status, o.body)
	}},
	{"effect (observe, after_execution)", func(t *testing.T, d *daemon, id string, slow bool) (string, error) {
		o := d.observe(t, "POST", "/v1/hooks/after_execution", `{"request_id":"`+id+`","result":{"plan_id":"p1","success":true,"steps":[]}}`)
		if !slow {
			return unavailable(o)
		}
		inv := o.invocation("execution-audit")
		return fmt.Sprintf("200, effect %s", inv), problemIf(o.status != 200 || !strings.HasPrefix(inv, "succeeded/"), "answered %d %s", o.status, inv)
	}},
	{"redact + cache.store (after_synthesis)", func(t *testing.T, d *daemon, id string, slow bool) (string, error) {
		if p := d.observe(t, "POST", "/v1/hooks/after_planning", `{"request_id":"`+id+`","request":"quote","plan":`+quotePlan+`}`); slow && p.status != 200 {
			return "", fmt.Errorf("the plan answered %d %v", p.status, p.body)
		}
		o := d.observe(t, "POST", "/v1/hooks/after_synthesis", `{"request_id":"`+id+`","response":"write to jane@example.com"}`)
		if !slow {
			return unavailable(o)
		}
		store, redact := o.invocation("response-cache-store"), o.invocation("pii-redaction")
		resp, _ := o.body["response"].(string)
		return fmt.Sprintf("200, redaction %s, cache.store fails open %s", redact, store),
			problemIf(o.status != 200 || store != "failed/hook_error" || strings.Contains(resp, "jane@") || !strings.HasPrefix(redact, "succeeded/"),
				"answered %d %q, redact %s, store %s", o.status, resp, redact, store)
	}},
	{"operation guard (trade over limit, held for an approval)", func(t *testing.T, d *daemon, id string, slow bool) (string, error) {
		trade := `{"step_id":"s1","namespace":"demo-tools","agent_name":"broker","instruction":"buy","metadata":{"capability":"execute_trade","parameters":{"amount":20000}}}`
		if p := d.observe(t, "POST", "/v1/hooks/after_planning", `{"request_id":"`+id+`","request":"buy","plan":{"plan_id":"p-broker","steps":[`+trade+`]}}`); slow && p.status != 200 {
			return "", fmt.Errorf("the broker's plan answered %d %v", p.status, p.body)
		}
		o := d.observe(t, "POST", "/v1/operations/check", `{"operation":"tool_call","call":{"request_id":"`+id+`","step_id":"s1","namespace":"demo-tools","agent_name":"broker","capability":"execute_trade","parameters":{"amount":20000}}}`)
		if !slow {
			return unavailable(o)
		}
		den, _ := o.body["denial"].(map[string]any)
		return fmt.Sprintf("%d denied %v", o.status, den["code"]), problemIf(o.status != 403 || den["code"] != "approval_required", "answered %d %v", o.status, o.body)
	}},
	{"execution record read", func(t *testing.T, d *daemon, _ string, slow bool) (string, error) {
		o := d.observe(t, "GET", "/v1/executions/pending", "")
		if !slow {
			return unavailable(o)
		}
		return "200 record served", problemIf(o.status != 200, "answered %d %v", o.status, o.body)
	}},
}

// faultMatrix collects the observed outcome of every hook kind under every fault.
type faultMatrix struct {
	faults   []string
	outcomes map[string]map[string]string // kind -> fault -> outcome
}

func (m *faultMatrix) add(fault, kind, outcome string) {
	if len(m.faults) == 0 || m.faults[len(m.faults)-1] != fault {
		m.faults = append(m.faults, fault)
	}
	if m.outcomes == nil {
		m.outcomes = map[string]map[string]string{}
	}
	if m.outcomes[kind] == nil {
		m.outcomes[kind] = map[string]string{}
	}
	m.outcomes[kind][fault] = outcome
}

func (m *faultMatrix) String() string {
	var b strings.Builder
	b.WriteString("| hook kind | " + strings.Join(m.faults, " | ") + " |\n|---|" + strings.Repeat("---|", len(m.faults)) + "\n")
	kinds := []string{}
	for _, p := range faultProbes {
		kinds = append(kinds, p.kind)
	}
	kinds = append(kinds, "daemon readiness", "recovery without restart")
	for _, k := range kinds {
		b.WriteString("| " + k + " |")
		for _, f := range m.faults {
			b.WriteString(" " + m.outcomes[k][f] + " |")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// runProbes runs every probe under fault and records the outcomes.
func runProbes(t *testing.T, m *faultMatrix, d *daemon, fault string, slow bool) {
	t.Helper()
	for i, p := range faultProbes {
		outcome, problem := p.run(t, d, fmt.Sprintf("probe-%s-%d", strings.Fields(fault)[0], i), slow)
		if problem != nil {
			t.Errorf("%s under %q: %v", p.kind, fault, problem)
			outcome += " (UNEXPECTED)"
		}
		m.add(fault, p.kind, outcome)
	}
	status, _, err := d.try("GET", "/readyz", "")
	m.add(fault, "daemon readiness", fmt.Sprintf("/readyz %d", status))
	if err != nil || status != 200 {
		t.Errorf("/readyz under %q = %d %v", fault, status, err)
	}
}

// prepare leaves state that the faults must not corrupt: a cached answer, a used-up
// quota and a request opened but not planned yet.
func prepare(t *testing.T, d *daemon) {
	t.Helper()
	for _, c := range [][2]string{
		{"/v1/hooks/before_planning", `{"request_id":"warm","request":"cached question","metadata":{"tenant":"t1"}}`},
		{"/v1/hooks/after_planning", `{"request_id":"warm","plan":` + quotePlan + `}`},
		{"/v1/hooks/after_synthesis", `{"request_id":"warm","response":"the cached answer"}`},
		{"/v1/hooks/before_planning", `{"request_id":"pending","request":"open question","metadata":{"tenant":"t9"}}`},
	} {
		if o := d.observe(t, "POST", c[0], c[1]); o.status != 200 {
			t.Fatalf("prepare %s: %v", c[0], o.body)
		}
	}
	for i := range quotaLimit + 1 {
		d.observe(t, "POST", "/v1/hooks/before_planning", fmt.Sprintf(`{"request_id":"spend-%d","request":"q%d","metadata":{"quota":"spent"}}`, i, i))
	}
}

// recovered waits until the daemon answers stage calls again, then checks that the
// state from before the fault is intact and drives decisions as before.
func recovered(t *testing.T, m *faultMatrix, d *daemon, fault string) {
	t.Helper()
	start := time.Now()
	for i := 0; ; i++ {
		o := d.observe(t, "POST", "/v1/hooks/before_planning", fmt.Sprintf(`{"request_id":"rec-%d","request":"hello","metadata":{"tenant":"t1"}}`, i))
		if o.status == 200 {
			break
		}
		if time.Since(start) > 20*time.Second {
			t.Fatalf("no recovery within 20s after %q: %v", fault, o.body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	took := time.Since(start).Round(time.Millisecond)
	hit := d.observe(t, "POST", "/v1/hooks/before_planning", `{"request_id":"rec-hit","request":"cached question","metadata":{"tenant":"t1"}}`)
	quota := d.observe(t, "POST", "/v1/hooks/before_planning", `{"request_id":"rec-quota","request":"again","metadata":{"quota":"spent"}}`)
	cont := d.observe(t, "POST", "/v1/hooks/after_planning", `{"request_id":"pending","plan":`+quotePlan+`}`)
	stamp := ""
	if steps, _ := cont.body["plan"].(map[string]any)["steps"].([]any); len(steps) > 0 {
		md, _ := steps[0].(map[string]any)["metadata"].(map[string]any)
		stamp, _ = md["rag_context"].(string)
	}
	if hit.shortCircuit() != "response_cache" || quota.shortCircuit() != "rate_limit" || cont.status != 200 || stamp != "Tenant: t9" {
		t.Errorf("after %q: cache %q, quota %q, pending request %d %q — state from before the fault lost or ignored", fault, hit.shortCircuit(), quota.shortCircuit(), cont.status, stamp)
	}
	m.add(fault, "recovery without restart", fmt.Sprintf("serving again %s after Redis is back; cache, quota and open request intact", took))
	// Put the pending request back to "opened, not planned" for the next fault.
	d.observe(t, "POST", "/v1/hooks/before_planning", `{"request_id":"pending","request":"open question","metadata":{"tenant":"t9"}}`)
}

func TestFaults_Matrix(t *testing.T) {
	config := replicaConfig(t)
	srv := redistest.StartServer(t)
	var m faultMatrix
	t.Cleanup(func() { t.Logf("fault matrix (fault × hook kind → observed outcome):\n%s", m.String()) })

	t.Run("direct", func(t *testing.T) {
		srv.Stop()
		down := "Redis down at daemon start"
		d := startDaemon(t, config, "--store", srv.URL())
		runProbes(t, &m, d, down, false)
		srv.Start()
		recoveredFresh(t, &m, d, down)
		prepare(t, d)

		killed := "Redis killed mid-run (SIGKILL)"
		srv.Kill()
		runProbes(t, &m, d, killed, false)
		srv.Start()
		recovered(t, &m, d, killed)
	})

	t.Run("proxied", func(t *testing.T) {
		proxy := startProxy(t, srv.Addr())
		url := redistest.WithPrefix(proxy.url("timeout=1s&cache_timeout=50ms"), "faults-proxied:")
		d := startDaemon(t, config, "--store", url)
		prepare(t, d)

		silent := "Redis silent (blackhole)"
		proxy.set(0, true)
		runProbes(t, &m, d, silent, false)
		proxy.set(0, false)
		recovered(t, &m, d, silent)

		slow := "Redis slow (+150ms per reply; budgets: cache 50ms, state 1s)"
		proxy.set(150*time.Millisecond, false)
		runProbes(t, &m, d, slow, true)
		proxy.set(0, false)
		recovered(t, &m, d, slow)
	})
}

// recoveredFresh is recovered for a daemon that never saw Redis up: there is no
// earlier state to check.
func recoveredFresh(t *testing.T, m *faultMatrix, d *daemon, fault string) {
	t.Helper()
	start := time.Now()
	for i := 0; ; i++ {
		if o := d.observe(t, "POST", "/v1/hooks/before_planning", fmt.Sprintf(`{"request_id":"fresh-%d","request":"hello"}`, i)); o.status == 200 {
			break
		}
		if time.Since(start) > 20*time.Second {
			t.Fatalf("no recovery within 20s after %q", fault)
		}
		time.Sleep(50 * time.Millisecond)
	}
	m.add(fault, "recovery without restart", fmt.Sprintf("serving %s after Redis came up", time.Since(start).Round(time.Millisecond)))
}
