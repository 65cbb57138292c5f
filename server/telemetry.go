package server

import (
	"context"
	"log/slog"
	"net/http"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"

	"github.com/agentd-dev/agentd/engine"
)

// telemetry holds the service's instruments. Every label is bounded: stages, outcomes,
// statuses and decision reasons; never request ids, hook names or payloads.
type telemetry struct {
	calls       metric.Int64Counter
	duration    metric.Float64Histogram
	invocations metric.Int64Counter
	operations  metric.Int64Counter
	findings    metric.Int64Counter
	sets        attrSets
}

// attrSets memoizes the attribute sets of the label combinations, as the option lists
// the instruments take, so recording a measurement allocates nothing once a combination
// has been seen (a list passed on with ... is not copied). It holds at most maxAttrSets
// of them: past that a combination's lists are built for each measurement, so no input
// can grow it.
type attrSets struct {
	mu   sync.RWMutex
	sets map[attrKey]attrOptions
}

// attrOptions are one attribute set as the options of Add and of Record.
type attrOptions struct {
	add    []metric.AddOption
	record []metric.RecordOption
}

// maxAttrSets bounds attrSets: far above the combinations of stages, outcomes,
// statuses, operations and decision reasons.
const maxAttrSets = 4096

type attrKey struct{ k1, v1, k2, v2, k3, v3 string }

func (a *attrSets) get(k attrKey) attrOptions {
	a.mu.RLock()
	o, ok := a.sets[k]
	a.mu.RUnlock()
	if ok {
		return o
	}
	kvs := []attribute.KeyValue{attribute.String(k.k1, k.v1)}
	if k.k2 != "" {
		kvs = append(kvs, attribute.String(k.k2, k.v2))
	}
	if k.k3 != "" {
		kvs = append(kvs, attribute.String(k.k3, k.v3))
	}
	set := metric.WithAttributeSet(attribute.NewSet(kvs...))
	o = attrOptions{add: []metric.AddOption{set}, record: []metric.RecordOption{set}}
	a.mu.Lock()
	if a.sets == nil {
		a.sets = map[attrKey]attrOptions{}
	}
	if len(a.sets) < maxAttrSets {
		a.sets[k] = o
	}
	a.mu.Unlock()
	return o
}

// Metrics is the stage API's engine.Observer: the stage, hook, check and finding
// counters and latencies, and a warn line for each refused call. The host adds it to
// the observers of the driver it builds (engine.DriverConfig.Observer), so that every
// transport over that driver (the stage API, the gateways) counts alike.
type Metrics struct {
	tel    *telemetry
	logger *slog.Logger
}

// NewMetrics returns the observer recording on mp (nil: recording nothing) and
// logging refusals to logger (nil: nowhere).
func NewMetrics(mp metric.MeterProvider, logger *slog.Logger) (*Metrics, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	tel, err := newTelemetry(mp)
	if err != nil {
		return nil, err
	}
	return &Metrics{tel: tel, logger: logger}, nil
}

func newTelemetry(mp metric.MeterProvider) (*telemetry, error) {
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	m := mp.Meter("github.com/agentd-dev/agentd/server")
	var t telemetry
	var err error
	if t.calls, err = m.Int64Counter("agentd.stage.calls", metric.WithDescription("stage calls by stage and outcome")); err != nil {
		return nil, err
	}
	if t.duration, err = m.Float64Histogram("agentd.stage.duration", metric.WithUnit("s"),
		metric.WithDescription("stage call latency, including hooks and state writes"),
		metric.WithExplicitBucketBoundaries(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1)); err != nil {
		return nil, err
	}
	if t.invocations, err = m.Int64Counter("agentd.hook.invocations", metric.WithDescription("hook invocations by stage, status and decision reason")); err != nil {
		return nil, err
	}
	if t.findings, err = m.Int64Counter("agentd.rule.findings", metric.WithDescription("what rules in warn or audit mode would have denied, by mode and where (hook or operation)")); err != nil {
		return nil, err
	}
	if t.operations, err = m.Int64Counter("agentd.operation.checks", metric.WithDescription("operation guard checks by operation and outcome")); err != nil {
		return nil, err
	}
	return &t, nil
}

// Checked implements engine.Observer: the check counter by operation and outcome, and
// the findings of guards in warn or audit mode. An operation name this daemon does not
// know (a malformed call) counts as "unknown". The check's log line is the decision
// log's (Config.Observer).
func (m *Metrics) Checked(ctx context.Context, r *engine.CheckReport) {
	operation := string(r.Call.Operation)
	if !r.Call.Operation.Known() {
		operation = "unknown"
	}
	m.tel.operations.Add(ctx, 1, m.tel.sets.get(attrKey{k1: "operation", v1: operation, k2: "outcome", v2: string(r.Outcome)}).add...)
	if r.Record != nil {
		m.countFindings(ctx, "operation", r.Record.WouldDeny)
	}
}

// Staged implements engine.Observer: the stage call, duration, invocation and finding
// metrics. The call's log line is the decision log's (Config.Observer).
func (m *Metrics) Staged(ctx context.Context, r *engine.StageReport) {
	stage := string(r.Stage)
	sets := &m.tel.sets
	calls := attrKey{k1: "stage", v1: stage, k2: "outcome", v2: string(r.Outcome)}
	if r.Cause != "" {
		calls.k3, calls.v3 = "cause", string(r.Cause)
	}
	m.tel.calls.Add(ctx, 1, sets.get(calls).add...)
	m.tel.duration.Record(ctx, r.Duration.Seconds(), sets.get(attrKey{k1: "stage", v1: stage}).record...)
	for _, inv := range r.Invocations {
		m.countFindings(ctx, "hook", inv.WouldDeny)
		reason := ""
		if inv.Decision != nil {
			reason = string(inv.Decision.Reason)
		}
		m.tel.invocations.Add(ctx, 1, sets.get(attrKey{k1: "stage", v1: stage, k2: "status", v2: string(inv.Status), k3: "reason", v3: reason}).add...)
	}
}

// countFindings counts findings by mode; where is hook or operation.
func (m *Metrics) countFindings(ctx context.Context, where string, fs []engine.Finding) {
	for _, f := range fs {
		m.tel.findings.Add(ctx, 1, m.tel.sets.get(attrKey{k1: "mode", v1: string(f.Mode), k2: "where", v2: where}).add...)
	}
}

// Refused implements engine.Observer: a stage call answered with an error before or
// instead of a decision (no live generation, a retired generation, an unavailable
// store) counts with the refusal as outcome, and logs one warn line.
func (m *Metrics) Refused(ctx context.Context, stage engine.Stage, id string, r *engine.RefusalError) {
	code := string(engine.RefusedStoreUnavailable)
	msg := ""
	if r != nil {
		code = string(r.Code)
		msg = r.Error()
	}
	m.tel.calls.Add(ctx, 1, m.tel.sets.get(attrKey{k1: "stage", v1: string(stage), k2: "outcome", v2: code}).add...)
	decisionID, _ := engine.DecisionIDFrom(ctx)
	m.logger.LogAttrs(ctx, slog.LevelWarn, "stage refused", slog.String("decision_id", decisionID),
		slog.String("request_id", id), slog.String("stage", string(stage)),
		slog.String("error_type", code), slog.String("error", msg))
}

// withTraceContext gives each call the W3C trace context (traceparent, tracestate) its
// request carries, read by the standard propagator, as its context's remote span
// context: the driver's spans of the call then join the caller's trace (see
// engine.RequestContext), on every route, the mounted gateways' included. A request
// without a traceparent header, or with a malformed one, keeps its context.
func withTraceContext(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Traceparent") != "" {
			r = r.WithContext(propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header)))
		}
		h.ServeHTTP(w, r)
	})
}
