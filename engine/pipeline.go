package engine

import (
	"errors"
	"fmt"
	"log/slog"
	"reflect"

	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// ErrInvalidPipeline is matched (errors.Is) by every construction error of New.
var ErrInvalidPipeline = errors.New("invalid pipeline")

// NilHookError reports a nil or typed-nil entry in the hook list, by zero-based index.
type NilHookError struct{ Index int }

func (e *NilHookError) Error() string {
	return fmt.Sprintf("invalid pipeline: hook %d is nil", e.Index)
}

// Is makes NilHookError match ErrInvalidPipeline.
func (e *NilHookError) Is(target error) bool { return target == ErrInvalidPipeline }

// RequiredHookReason names the composition rule a required hook breaks.
type RequiredHookReason string

// Reasons of InvalidRequiredHookError.
const (
	RequiredStageDrift  RequiredHookReason = "stage_drift"
	RequiredMultiple    RequiredHookReason = "multiple_required"
	RequiredNotTerminal RequiredHookReason = "required_not_terminal"
)

// InvalidRequiredHookError reports a required after-planning hook that breaks a
// composition rule: it does not implement AfterPlanningHook (stage_drift), a second one
// is registered (multiple_required) or an after_planning hook follows it
// (required_not_terminal).
type InvalidRequiredHookError struct {
	Hook   string
	Index  int
	Reason RequiredHookReason
}

func (e *InvalidRequiredHookError) Error() string {
	return fmt.Sprintf("invalid pipeline: required after-planning hook %q (index %d): %s", e.Hook, e.Index, e.Reason)
}

// Is makes InvalidRequiredHookError match ErrInvalidPipeline.
func (e *InvalidRequiredHookError) Is(target error) bool { return target == ErrInvalidPipeline }

// Option configures a Pipeline.
type Option func(*options)

type options struct {
	catalog  *Catalog
	limits   PlanLimits
	tracer   trace.TracerProvider
	payloads bool
	meter    metric.MeterProvider
	logger   *slog.Logger
}

// WithCatalog sets the catalog that plans are validated against after every accepted
// after_planning mutation. Without it the catalog rules of ValidatePlan are skipped.
func WithCatalog(c *Catalog) Option { return func(o *options) { o.catalog = c } }

// WithPlanLimits sets the size limits of plans (rule 0 of plan validation); zero
// fields keep DefaultPlanLimits.
func WithPlanLimits(l PlanLimits) Option { return func(o *options) { o.limits = l } }

// WithTracerProvider sets where hook spans go; the default records nothing.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) { o.tracer = tp }
}

// WithSpanPayloads puts tool call arguments and results on the execute_tool spans of
// the driver's checks and finishes (gen_ai.tool.call.arguments and .result); by
// default spans carry no payload.
func WithSpanPayloads(on bool) Option { return func(o *options) { o.payloads = on } }

// WithMeterProvider sets where the short-circuit decision metric goes; the default
// records nothing.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(o *options) { o.meter = mp }
}

// WithLogger sets the logger for fail-open warnings; the default discards.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// Pipeline is an immutable, validated, ordered hook list with one runner per stage.
// It is safe for concurrent use.
type Pipeline struct {
	before    []beforeEntry
	after     []afterEntry
	execution []executionEntry
	synthesis []synthesisEntry
	catalog   *Catalog
	limits    PlanLimits
	tel       telemetry
	logger    *slog.Logger
}

type entry struct {
	name string
	span string
	mode RuleMode
}

type beforeEntry struct {
	entry
	decision BeforePlanningDecisionHook
	legacy   BeforePlanningHook
}

type afterEntry struct {
	entry
	hook     AfterPlanningHook
	required bool
	readOnly bool
}

type executionEntry struct {
	entry
	hook AfterExecutionHook
}

type synthesisEntry struct {
	entry
	hook AfterSynthesisHook
}

// New validates hooks and returns the pipeline that runs them in slice order. The
// slice is copied; a nil or empty slice is a valid pipeline with no hooks. Errors match
// ErrInvalidPipeline: a nil entry (*NilHookError with its index) or a broken required
// hook (*InvalidRequiredHookError).
func New(hooks []Hook, opts ...Option) (*Pipeline, error) {
	o := options{logger: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		opt(&o)
	}
	if o.tracer == nil {
		o.tracer = tracenoop.NewTracerProvider()
	}
	if o.meter == nil {
		o.meter = metricnoop.NewMeterProvider()
	}
	tel, err := newTelemetry(o.tracer, o.meter, o.payloads)
	if err != nil {
		return nil, err
	}
	p := &Pipeline{catalog: o.catalog, limits: o.limits.withDefaults(), tel: tel, logger: o.logger}
	if err := p.index(hooks); err != nil {
		return nil, err
	}
	return p, nil
}

// index checks hooks and files each under the stages it takes part in; the caller's
// slice is not kept.
func (p *Pipeline) index(hooks []Hook) error {
	required := -1
	for i, h := range hooks {
		if isNil(h) {
			return &NilHookError{Index: i}
		}
		name := h.Name()
		if _, ok := h.(RequiredAfterPlanningHook); ok {
			if _, ok := h.(AfterPlanningHook); !ok {
				return &InvalidRequiredHookError{Hook: name, Index: i, Reason: RequiredStageDrift}
			}
			if required >= 0 {
				return &InvalidRequiredHookError{Hook: name, Index: i, Reason: RequiredMultiple}
			}
			required = i
		} else if _, ok := h.(AfterPlanningHook); ok && required >= 0 {
			return &InvalidRequiredHookError{Hook: hooks[required].Name(), Index: required, Reason: RequiredNotTerminal}
		}
		p.add(h, name)
	}
	return nil
}

func (p *Pipeline) add(h Hook, name string) {
	mode := modeOf(h)
	span := func(s Stage) entry {
		return entry{name: name, span: "pipeline.hook." + string(s) + "." + name, mode: mode}
	}
	d, isDecision := h.(BeforePlanningDecisionHook)
	l, isLegacy := h.(BeforePlanningHook)
	if isDecision || isLegacy {
		p.before = append(p.before, beforeEntry{entry: span(StageBeforePlanning), decision: d, legacy: l})
	}
	if a, ok := h.(AfterPlanningHook); ok {
		_, required := h.(RequiredAfterPlanningHook)
		r, reader := h.(PlanReader)
		p.after = append(p.after, afterEntry{entry: span(StageAfterPlanning), hook: a, required: required, readOnly: reader && r.ReadsPlanOnly()})
	}
	if e, ok := h.(AfterExecutionHook); ok {
		p.execution = append(p.execution, executionEntry{entry: span(StageAfterExecution), hook: e})
	}
	if s, ok := h.(AfterSynthesisHook); ok {
		p.synthesis = append(p.synthesis, synthesisEntry{entry: span(StageAfterSynthesis), hook: s})
	}
}

// RequiredHook returns the name of the required after-planning hook, if any.
func (p *Pipeline) RequiredHook() (string, bool) {
	if n := len(p.after); n > 0 && p.after[n-1].required {
		return p.after[n-1].name, true
	}
	return "", false
}

func isNil(h Hook) bool {
	if h == nil {
		return true
	}
	v := reflect.ValueOf(h)
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Func, reflect.Chan, reflect.Slice, reflect.Interface:
		return v.IsNil()
	}
	return false
}
