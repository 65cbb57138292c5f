package decisionlog

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
)

// DefaultQueue is how many events wait for the worker at most when Options.Queue is 0.
const DefaultQueue = 8192

// Options configure a Logger.
type Options struct {
	// Rules returns the decision_log section of the generation with id (nil for none);
	// ok is false when the generation is not known. Events of a call on an unknown
	// generation carry no payload.
	Rules func(generation string) (rules *config.DecisionLog, ok bool)
	Sinks []Sink
	// Queue bounds the events waiting for the worker; 0 means DefaultQueue.
	Queue         int
	MeterProvider metric.MeterProvider
	// Logger gets the sinks' own failures (an unreachable endpoint, a file that cannot
	// be written), never events.
	Logger *slog.Logger
}

// GenerationsByID finds a kept generation by its id, as a reload.Registry does (nil
// when it is not kept).
type GenerationsByID interface {
	Get(id string) *config.Generation
}

// RulesOf is the Options.Rules of the generations gens keeps: each one's decision_log
// section.
func RulesOf(gens GenerationsByID) func(generation string) (*config.DecisionLog, bool) {
	return func(id string) (*config.DecisionLog, bool) {
		if g := gens.Get(id); g != nil {
			return g.DecisionLog, true
		}
		return nil, false
	}
}

// Logger is the decision log: an engine.Observer that turns every report into one
// event for its sinks, off the caller's path. It is safe for concurrent use.
type Logger struct {
	opts  Options
	in    *instruments
	wants wants
	enc   encoder // the worker's
	// event and payload are the worker's: the event being written and its payload
	// before masking, rebuilt for each report.
	event   Event
	payload map[string]any
	queue   chan pending
	stop    chan struct{}
	done    chan struct{}
}

var errNoRules = errors.New("decisionlog: Options.Rules is required")

// New starts a logger's worker; Close stops it.
func New(opts Options) (*Logger, error) {
	if opts.Rules == nil {
		return nil, errNoRules
	}
	if opts.Queue <= 0 {
		opts.Queue = DefaultQueue
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	in, err := newInstruments(opts.MeterProvider, opts.Logger)
	if err != nil {
		return nil, err
	}
	l := &Logger{opts: opts, in: in, queue: make(chan pending, opts.Queue), stop: make(chan struct{}), done: make(chan struct{})}
	for _, s := range opts.Sinks {
		s.bind(in)
		w := s.wants()
		l.wants.payload = l.wants.payload || w.payload
		l.wants.line = l.wants.line || w.line
	}
	go l.run()
	return l, nil
}

// Staged implements engine.Observer.
func (l *Logger) Staged(_ context.Context, r *engine.StageReport) {
	l.enqueue(pending{stage: r}, r.Generation)
}

// Checked implements engine.Observer.
func (l *Logger) Checked(_ context.Context, r *engine.CheckReport) {
	l.enqueue(pending{check: r}, r.Generation)
}

// Refused implements engine.Observer.
func (l *Logger) Refused(ctx context.Context, stage engine.Stage, id string, r *engine.RefusalError) {
	l.enqueue(pending{refusal: newRefusal(ctx, stage, id, r)}, "")
}

// Emit writes an event built elsewhere (the shadow's disagreements), with the drop
// rules of generation; it carries no payload.
func (l *Logger) Emit(e *Event, generation string) {
	l.enqueue(pending{built: e}, generation)
}

// enqueue hands p to the worker with the rules of generation, or drops it when the
// queue is full. It never blocks.
func (l *Logger) enqueue(p pending, generation string) {
	if generation != "" {
		p.rules, p.known = l.opts.Rules(generation)
	}
	select {
	case l.queue <- p:
	default:
		l.in.drop("logger", DropQueueFull, 1)
	}
}

// linger is how long the worker rests after writing out the queue: events reported
// meanwhile wake no one and are written together, so a busy daemon pays for a wake-up
// and a flush per batch, not per event.
const linger = 10 * time.Millisecond

// run is the worker: it waits for an event, writes out the queue, flushes the sinks and
// rests for linger before it waits again.
func (l *Logger) run() {
	defer close(l.done)
	rest := time.NewTimer(linger)
	for {
		select {
		case p := <-l.queue:
			l.process(p)
			l.drain()
		case <-l.stop:
			l.drain()
			return
		}
		rest.Reset(linger)
		select {
		case <-rest.C:
		case <-l.stop:
			l.drain()
			return
		}
	}
}

// drain writes out what is queued and flushes the sinks.
func (l *Logger) drain() {
	for len(l.queue) > 0 {
		l.process(<-l.queue)
	}
	l.flush()
}

func (l *Logger) flush() {
	for _, s := range l.opts.Sinks {
		s.flush()
	}
}

// process builds p's event, applies the generation's drop rules and masks, encodes it
// once and gives it to every sink. An event whose encoding panics (a payload value's
// MarshalJSON) is dropped, as one with no encoding is; the worker goes on.
func (l *Logger) process(p pending) {
	defer l.forget()
	defer func() {
		if recover() != nil { // the value is not logged: it may quote the payload
			l.in.drop("logger", DropEncode, 1)
			l.opts.Logger.Warn("decision event dropped: encoding it panicked", "decision_id", l.event.DecisionID)
		}
	}()
	e := p.event(&l.event)
	if p.rules.Drops(e.facts()) {
		l.in.drop("logger", DropRule, 1)
		return
	}
	if l.wants.payload {
		if payload := p.payload(l.payload); payload != nil {
			l.payload = payload
			if p.known {
				masked, erased, replaced := p.rules.Mask(payload)
				e.setPayload(masked)
				e.Erased, e.Masked = erased, replaced
			} else {
				e.Erased = []string{"*"} // the generation's masks are unknown: show nothing
			}
		}
	}
	var line []byte
	if l.wants.line {
		var err error
		if line, err = l.enc.encode(e); err != nil {
			l.in.drop("logger", DropEncode, 1)
			l.opts.Logger.Warn("decision event has no JSON encoding", "decision_id", e.DecisionID, "error", err.Error())
			return
		}
	}
	for _, s := range l.opts.Sinks {
		s.write(e, line)
	}
}

// forget empties the worker's event and payload map, keeping their arrays and maps for
// the next report, so that an idle worker holds none of the last report's values.
func (l *Logger) forget() {
	clear(l.payload)
	hooks, in, out := l.event.Hooks, l.event.Input, l.event.Output
	clear(hooks[:cap(hooks)])
	clear(in)
	clear(out)
	l.event = Event{Hooks: hooks[:0], Input: in, Output: out}
}

// Close stops the worker once it has written what is queued, then closes the sinks
// (the HTTP sink sends what it buffered until ctx ends). Events reported after Close
// are not written.
func (l *Logger) Close(ctx context.Context) error {
	close(l.stop)
	select {
	case <-l.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	var errs []error
	for _, s := range l.opts.Sinks {
		errs = append(errs, s.close(ctx))
	}
	return errors.Join(errs...)
}
