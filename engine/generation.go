package engine

import (
	"time"

	"github.com/agentd-dev/agentd/engine/op"
)

// Generation is one compiled configuration as the driver runs it: the hook pipeline,
// the operation guards and the id that names it in records, logs and cache keys. It is
// immutable and safe for concurrent use.
type Generation struct {
	ID       string
	Pipeline *Pipeline
	// Runner runs the operation observers and guards; nil allows every operation.
	Runner *op.Runner
	// PolicyRevision is the guards' policy revision, empty without guards.
	PolicyRevision string
	// Binding binds tool calls to the request's accepted plan; "" means DefaultBinding.
	Binding BindingMode
	// MaxRequestAge bounds how long a request may run on this generation after it
	// opened; 0 means no bound.
	MaxRequestAge time.Duration
	// ApprovalTTL is how long an approval a check opens stays pending; 0 means
	// DefaultApprovalTTL.
	ApprovalTTL time.Duration
	// Labels labels the results finishes report; nil attaches none but those a
	// finish states itself.
	Labels Labeler
}

// telemetry returns the instruments of the generation's pipeline (none without one).
func (g *Generation) telemetry() telemetry {
	if g.Pipeline == nil {
		return telemetry{}
	}
	return g.Pipeline.tel
}

// binding returns the generation's binding mode.
func (g *Generation) binding() BindingMode {
	if g.Binding == "" {
		return DefaultBinding
	}
	return g.Binding
}

// Generations is where the driver finds generations: the live one, for requests that
// open now, and older ones by id, for requests that opened on them. Implementations
// must be safe for concurrent use.
type Generations interface {
	// Live returns the generation new requests open on, nil before there is one.
	Live() *Generation
	// Lookup returns the generation with id, nil when it is not (or no longer) kept.
	Lookup(id string) *Generation
}

// Fixed serves one generation, live forever: embedders with a config that never
// changes use it.
type Fixed struct{ Gen *Generation }

// Live implements Generations.
func (f Fixed) Live() *Generation { return f.Gen }

// Lookup implements Generations.
func (f Fixed) Lookup(id string) *Generation {
	if f.Gen != nil && f.Gen.ID == id {
		return f.Gen
	}
	return nil
}
