package shadow

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
)

// Evaluation results, the result label of agentd.shadow.evaluations.
const (
	resultAgree    = "agree"
	resultDisagree = "disagree"
	resultSkipped  = "skipped" // nothing to compare: a re-sent plan, a cached or rate-limited answer
	resultDropped  = "dropped" // the evaluation queue was full
)

// telemetry holds the shadow's instruments; every label is bounded (event kinds,
// results, stages, operations and changes).
type telemetry struct {
	evaluations   metric.Int64Counter
	disagreements metric.Int64Counter
}

func newTelemetry(mp metric.MeterProvider) (*telemetry, error) {
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	m := mp.Meter("github.com/agentd-dev/agentd/shadow")
	var t telemetry
	var err error
	if t.evaluations, err = m.Int64Counter("agentd.shadow.evaluations", metric.WithDescription("calls the shadow configuration decided again, by kind (stage, check) and result")); err != nil {
		return nil, err
	}
	if t.disagreements, err = m.Int64Counter("agentd.shadow.disagreements", metric.WithDescription("shadow decisions unlike the live ones, by stage or operation and change")); err != nil {
		return nil, err
	}
	return &t, nil
}

func (t *telemetry) evaluated(kind, result string) {
	t.evaluations.Add(context.Background(), 1, metric.WithAttributes(attribute.String("kind", kind), attribute.String("result", result)))
}

func (t *telemetry) disagreed(decision, change string) {
	t.disagreements.Add(context.Background(), 1, metric.WithAttributes(attribute.String("decision", decision), attribute.String("change", change)))
}
