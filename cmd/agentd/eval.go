package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"time"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/config/reload"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/jsonread"
	"github.com/agentd-dev/agentd/engine/policy"
	"github.com/agentd-dev/agentd/engine/store"
	"github.com/agentd-dev/agentd/server"
)

// evalRoutes maps a call name (--stage, or "call" in a script) to the API route whose
// body it takes.
var evalRoutes = map[string]string{
	"before_planning": "/v1/hooks/before_planning",
	"after_planning":  "/v1/hooks/after_planning",
	"after_execution": "/v1/hooks/after_execution",
	"after_synthesis": "/v1/hooks/after_synthesis",
	"operation":       "/v1/operations/check",
	"finish":          "/v1/operations/finish",
}

// scriptCall is one call of an eval script.
type scriptCall struct {
	Call string          `json:"call"`
	Body json.RawMessage `json:"body"`
}

// scriptAnswer is the daemon's answer to one script call.
type scriptAnswer struct {
	Call   string          `json:"call"`
	Status int             `json:"status"`
	Body   json.RawMessage `json:"body"`
}

// scriptOutput is what eval --script prints: every answer, then the execution record
// of every request the script named.
type scriptOutput struct {
	Answers []scriptAnswer             `json:"answers"`
	Records map[string]json.RawMessage `json:"records"`
}

const evalDoc = `
Compile a config directory and run, in process and exactly as the HTTP API would, one
stage call (--stage with --input: the answer body is printed) or a script of calls on
one store (--script: a JSON list of {"call": STAGE, "body": {...}}; every answer and
the execution record of every request named are printed). With --explain, every
after_planning call is explained (?explain=true): the answer names, for each
violation, the deny rule (file:line) that produced it, its variables and the input it
read, or the rules consulted for an allowed plan; a one-line summary per violation
goes to stderr.

The driver is built as 'agentd serve' builds it. With --decision-log-file or
--decision-log-url every call is a decision event too, masked by the config's
decision_log section, written before eval exits.

Exit 0: every answer is 2xx; 1: otherwise (rejections, denials, invalid input); 2:
usage.`

// runEval compiles the config and runs, in process and exactly as the HTTP API would,
// one stage call (--stage with --input: the answer body is printed) or a script of
// calls on one store (--script: a JSON list of {call, body}; every answer and the
// record of every request named is printed). Exit 0 when every answer is 2xx, 1
// otherwise (rejections, denials and invalid input included), 2 for usage errors.
func runEval(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("eval", "agentd eval --config DIR (--stage STAGE --input FILE | --script FILE) [--explain]", evalDoc, stderr)
	dir := fs.String("config", "", "config directory (required)")
	stage := fs.String("stage", "", "before_planning, after_planning, after_execution, after_synthesis, operation or finish")
	input := fs.String("input", "", "file with the call's API request body (JSON); - for stdin")
	script := fs.String("script", "", "file with a JSON list of {\"call\": STAGE, \"body\": {...}}, run in order on one store; - for stdin")
	explain := fs.Bool("explain", false, "explain every after_planning call (?explain=true): the answer names, for each violation, the deny rule (file:line) and the values it read; a summary goes to stderr")
	var evidence evidenceFlags
	evidence.registerSinks(fs.FlagSet)
	if _, code, ok := fs.parse(args, stdout, 0, 0); !ok {
		return code
	}
	if evidence.check("eval", stderr) != nil {
		return exitUsage
	}
	route, ok := evalRoutes[*stage]
	single := ok && *input != "" && *script == ""
	if *dir == "" || !single && (*script == "" || *stage != "" || *input != "") {
		fmt.Fprintln(stderr, "agentd eval: give --config and either --stage with --input or --script")
		fs.printUsage(stderr)
		return exitUsage
	}
	svc, closeLog, err := evalService(*dir, &evidence, stderr)
	if err != nil {
		return exitFailed
	}
	defer closeLog(ctx)
	h := svc.Handler(server.HTTPOptions{})
	if single {
		body, err := readInput(*input)
		if err != nil {
			fmt.Fprintf(stderr, "agentd eval: %v\n", err)
			return exitFailed
		}
		status, answer := callHandler(ctx, h, http.MethodPost, explained(route, *explain), body)
		printJSON(stdout, answer)
		if *explain {
			printExplanation(stderr, answer)
		}
		return exitOf(status)
	}
	calls, err := readScript(*script)
	if err != nil {
		fmt.Fprintf(stderr, "agentd eval: %v\n", err)
		return exitFailed
	}
	out, code := runScript(ctx, h, calls, *explain)
	var data bytes.Buffer
	enc := json.NewEncoder(&data)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(out)
	printJSON(stdout, data.Bytes())
	return code
}

// evalFlushTimeout bounds how long eval waits for its decision events to be written
// (serve's default --drain-timeout).
const evalFlushTimeout = 30 * time.Second

// evalService compiles dir and serves it on a fresh in-process store, through the
// driver the host builds (hostDriver), with the decision log evidence asks for. Its
// close writes out the decision log's events.
func evalService(dir string, evidence *evidenceFlags, stderr io.Writer) (*server.Service, func(context.Context), error) {
	gen, err := config.Load(dir, config.Options{})
	if err != nil {
		printLoadError(stderr, dir, err)
		return nil, nil, err
	}
	registry := reload.NewRegistry(1)
	registry.Swap(gen)
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	dlog, err := openDecisionLog(evidence, false, registry, logger, logOutput{level: slog.LevelWarn}, nil)
	if err != nil {
		fmt.Fprintf(stderr, "agentd eval: %v\n", err)
		return nil, nil, err
	}
	closeLog := func(ctx context.Context) { closeDecisionLog(ctx, dlog, evalFlushTimeout, logger) }
	mem := store.NewMemory(store.MemoryOptions{})
	driver, err := hostDriver(registry, mem, mem, 0, decisionObserver(dlog))
	var svc *server.Service
	if err == nil {
		svc, err = server.New(server.Config{Registry: registry, Driver: driver, Records: mem})
	}
	if err != nil {
		closeLog(context.Background())
		fmt.Fprintf(stderr, "agentd eval: %v\n", err)
		return nil, nil, err
	}
	return svc, closeLog, nil
}

func readScript(path string) ([]scriptCall, error) {
	data, err := readInput(path)
	if err != nil {
		return nil, err
	}
	var calls []scriptCall
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&calls); err != nil {
		return nil, fmt.Errorf("script %s: %w", path, err)
	}
	if at := jsonread.Trailing(data, dec.InputOffset()); at >= 0 {
		return nil, fmt.Errorf("script %s: it goes on after its JSON array, at byte %d", path, at)
	}
	for i, c := range calls {
		if _, ok := evalRoutes[c.Call]; !ok {
			return nil, fmt.Errorf("script %s: call %d: unknown call %q", path, i, c.Call)
		}
	}
	return calls, nil
}

// runScript runs calls in order and collects the records of the requests they name;
// with explain, every after_planning call is explained.
func runScript(ctx context.Context, h http.Handler, calls []scriptCall, explain bool) (scriptOutput, int) {
	out := scriptOutput{Answers: []scriptAnswer{}, Records: map[string]json.RawMessage{}}
	code := exitOK
	var ids []string
	for _, c := range calls {
		status, body := callHandler(ctx, h, http.MethodPost, explained(evalRoutes[c.Call], explain), c.Body)
		out.Answers = append(out.Answers, scriptAnswer{Call: c.Call, Status: status, Body: body})
		if exitOf(status) != exitOK {
			code = exitFailed
		}
		if id := requestIDOf(c.Body); id != "" && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	for _, id := range ids {
		if status, rec := callHandler(ctx, h, http.MethodGet, "/v1/executions/"+id, nil); status == http.StatusOK {
			out.Records[id] = rec
		}
	}
	return out, code
}

// requestIDOf reads the request id a call body names: request_id, or call.request_id.
func requestIDOf(body json.RawMessage) string {
	var b struct {
		RequestID string `json:"request_id"`
		Call      struct {
			RequestID string `json:"request_id"`
		} `json:"call"`
	}
	_ = json.Unmarshal(body, &b)
	if b.RequestID != "" {
		return b.RequestID
	}
	return b.Call.RequestID
}

// callHandler runs one request, its body JSON, through h and returns the status and
// the body.
func callHandler(ctx context.Context, h http.Handler, method, route string, body []byte) (int, json.RawMessage) {
	rec := httptest.NewRecorder()
	req := httptest.NewRequestWithContext(ctx, method, route, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	h.ServeHTTP(rec, req)
	return rec.Code, bytes.TrimSpace(rec.Body.Bytes())
}

// explained adds ?explain=true to the after_planning route when explain is set.
func explained(route string, explain bool) string {
	if explain && route == evalRoutes[string(engine.StageAfterPlanning)] {
		return route + "?explain=true"
	}
	return route
}

// printExplanation writes one line per violation of an explained after_planning
// answer (the deny rule and where it is written), or the rules consulted when nothing
// was denied.
func printExplanation(w io.Writer, answer []byte) {
	var a struct {
		Explanation []*policy.Explanation `json:"explanation"`
		Error       struct {
			Explanation []*policy.Explanation `json:"explanation"`
		} `json:"error"`
	}
	_ = json.Unmarshal(answer, &a)
	for _, x := range append(a.Explanation, a.Error.Explanation...) {
		if len(x.Violations) == 0 {
			produced := 0
			for _, r := range x.Consulted {
				if r.Produced {
					produced++
				}
			}
			fmt.Fprintf(w, "explain %s: no violation; %d rule(s) consulted, %d produced a value\n", x.Query, len(x.Consulted), produced)
		}
		for _, v := range x.Violations {
			step := ""
			if v.Violation.StepID != "" {
				step = " (step " + v.Violation.StepID + ")"
			}
			fmt.Fprintf(w, "explain %s: %s%s produced by %s at %s\n", x.Query, v.Violation.Code, step, v.Source.Rule, v.Source.Location)
		}
	}
}

func exitOf(status int) int {
	if status/100 != 2 {
		return exitFailed
	}
	return exitOK
}

// printJSON prints data indented, or as it is when it is not JSON.
func printJSON(w io.Writer, data []byte) {
	var pretty bytes.Buffer
	if json.Indent(&pretty, data, "", "  ") != nil {
		pretty.Reset()
		pretty.Write(data)
	}
	fmt.Fprintf(w, "%s\n", bytes.TrimSpace(pretty.Bytes()))
}

func readInput(path string) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(os.Stdin)
	}
	return os.ReadFile(path)
}
