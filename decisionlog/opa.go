package decisionlog

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
)

// DefaultOPABundle names the bundle of an OPA event's bundles member when
// OPAOptions.Bundle is empty.
const DefaultOPABundle = "agentd"

// OPAOptions configure NewOPASink.
type OPAOptions struct {
	// HTTPOptions are the endpoint and the batching, retry and buffer bounds, as for
	// NewHTTPSink.
	HTTPOptions
	// Labels are every event's labels: OPA's id (this instance) and version (agentd's)
	// and any others. OPA requires id and version; NewOPASink refuses labels without them.
	Labels map[string]string
	// Bundle names the one bundle of each event's bundles member, whose revision is the
	// generation the call ran on (DefaultOPABundle when empty).
	Bundle string
}

// NewOPASink sends events as NewHTTPSink does (batches, backoff, bounded buffer, the
// same drop reasons), under the sink label opa-http, in OPA's decision-log format: each
// POST is a gzipped JSON array (Content-Encoding: gzip) of events of the shape of OPA's
// logs.EventV1, which an OPA decision-log service accepts:
//
//   - decision_id, timestamp, labels (id, version and the others), and bundles
//     {Bundle: {revision}} with the call's generation as the revision;
//   - path: agentd/stage/{stage}, agentd/check/{operation}, agentd/refusal/{stage} or
//     agentd/shadow/{stage or operation};
//   - input: the masked payload the call was given (as the other sinks' input), with
//     erased and masked naming the mask paths that removed or replaced something;
//   - result: outcome, cause, hooks, violations, denial, would_deny and shadow as the
//     other sinks write them, and what the call answered (accepted_plan, response);
//   - metrics: timer_agentd_decision_ns, the call's duration;
//   - custom: kind, request_id, stage, operation, step_id, generation, policy_revision
//     and schema_version, the members of agentd's own events that OPA's shape has no
//     place for.
//
// An event of a generation whose masks are unknown carries no input (erased ["*"]), as
// for the other sinks.
func NewOPASink(opts OPAOptions) (Sink, error) {
	if _, err := NewHTTPSink(opts.HTTPOptions); err != nil {
		return nil, err
	}
	if opts.Labels["id"] == "" || opts.Labels["version"] == "" {
		return nil, fmt.Errorf("decision log: OPA labels need an id and a version, got %v", opts.Labels)
	}
	if opts.Bundle == "" {
		opts.Bundle = DefaultOPABundle
	}
	opts.HTTPOptions.withDefaults()
	f := &opaFormat{bundle: opts.Bundle}
	keys := slices.Sorted(maps.Keys(opts.Labels))
	f.labels = append(f.labels, '{')
	for i, k := range keys {
		if i > 0 {
			f.labels = append(f.labels, ',')
		}
		f.labels = engine.AppendJSONString(f.labels, k)
		f.labels = append(f.labels, ':')
		f.labels = engine.AppendJSONString(f.labels, opts.Labels[k])
	}
	f.labels = append(f.labels, '}')
	return newHTTPSink(opts.HTTPOptions, f), nil
}

// opaFormat encodes events in OPA's shape; only the logger's worker uses it.
type opaFormat struct {
	labels []byte // the labels member's value, encoded once
	bundle string
	enc    encoder
}

// opaPaths are the first segment of an event's path, by kind.
var opaPaths = map[string]string{
	config.EventStage: "agentd/stage/", config.EventCheck: "agentd/check/",
	config.EventRefusal: "agentd/refusal/", config.EventShadow: "agentd/shadow/",
}

// encode returns e in OPA's shape, in the format's buffer: valid until the next call.
func (f *opaFormat) encode(e *Event) ([]byte, error) {
	enc := &f.enc
	enc.buf = enc.buf[:0]
	clear(enc.plans)
	enc.buf = append(enc.buf, `{"decision_id":`...)
	enc.buf = engine.AppendJSONString(enc.buf, e.DecisionID)
	enc.key("labels")
	enc.buf = append(enc.buf, f.labels...)
	if e.Generation != "" {
		enc.key("bundles")
		enc.buf = append(enc.buf, '{')
		enc.buf = engine.AppendJSONString(enc.buf, f.bundle)
		enc.buf = append(enc.buf, `:{"revision":`...)
		enc.buf = engine.AppendJSONString(enc.buf, e.Generation)
		enc.buf = append(enc.buf, '}', '}')
	}
	target := string(e.Stage)
	if e.Operation != "" {
		target = string(e.Operation)
	}
	enc.member("path", opaPaths[e.Kind]+target, false)
	if len(e.Input) > 0 {
		enc.key("input")
		if err := enc.payload(e.Input); err != nil {
			return nil, err
		}
	}
	enc.key("result")
	if err := f.result(e); err != nil {
		return nil, err
	}
	enc.strings("erased", e.Erased)
	enc.strings("masked", e.Masked)
	enc.key("timestamp")
	var err error
	if enc.buf, err = engine.AppendJSONTime(enc.buf, e.Timestamp); err != nil {
		return nil, err
	}
	enc.buf = append(enc.buf, `,"metrics":{"timer_agentd_decision_ns":`...)
	if enc.buf, err = engine.AppendJSONFloat(enc.buf, math.Round(e.DurationMS*1e6)); err != nil {
		return nil, err
	}
	enc.buf = append(enc.buf, `},"custom":{"kind":`...)
	enc.buf = engine.AppendJSONString(enc.buf, e.Kind)
	enc.member("request_id", e.RequestID, true)
	enc.member("stage", string(e.Stage), true)
	enc.member("operation", string(e.Operation), true)
	enc.member("step_id", e.StepID, true)
	enc.member("generation", e.Generation, true)
	enc.member("policy_revision", e.PolicyRevision, true)
	enc.key("schema_version")
	if err := enc.value(e.SchemaVersion); err != nil {
		return nil, err
	}
	enc.buf = append(enc.buf, '}', '}')
	return enc.buf, nil
}

// result writes the result member's value: the decision, then what the call answered.
func (f *opaFormat) result(e *Event) error {
	enc := &f.enc
	enc.buf = append(enc.buf, `{"outcome":`...)
	enc.buf = engine.AppendJSONString(enc.buf, e.Outcome)
	if err := enc.verdict(e); err != nil {
		return err
	}
	if err := enc.optional("shadow", e.Shadow != nil, func() any { return e.Shadow }); err != nil {
		return err
	}
	if err := enc.members(e.Output, true); err != nil { // accepted_plan, response
		return err
	}
	enc.buf = append(enc.buf, '}')
	return nil
}
