package expr

import (
	"maps"
	"slices"
	"strconv"

	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/types"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
)

// Size bounds assumed by the compile-time cost estimate. CEL cannot know how large the
// request, the metadata or a plan will be, so the estimate assumes that every string or
// bytes value has at most MaxStringSize characters and every list, map or dyn value (a
// metadata entry, a plan field) at most MaxCollectionSize elements. An evaluation
// whose inputs are that small is bounded by the estimate and runs without runtime cost
// tracking (Program.fits); larger inputs are bounded by the runtime cost limit, which
// then fails the evaluation instead.
// lists.range() is capped at MaxCollectionSize elements as well.
const (
	MaxStringSize     = 64 << 10
	MaxCollectionSize = 1000
)

var sizeAssumption = "assuming strings of at most " + strconv.Itoa(MaxStringSize) +
	" characters and lists and maps of at most " + strconv.Itoa(MaxCollectionSize) + " elements"

// sizeEstimator is the checker.CostEstimator applying the bounds above; values of any other
// type (numbers, timestamps, types, null) have size 1.
type sizeEstimator struct{}

func (sizeEstimator) EstimateSize(node checker.AstNode) *checker.SizeEstimate {
	t := node.Type()
	if t == nil {
		return nil
	}
	if n, bounded := flowBound(node.Path()); bounded {
		return &checker.SizeEstimate{Min: 0, Max: n}
	}
	switch t.Kind() {
	case types.StringKind, types.BytesKind:
		return &checker.SizeEstimate{Min: 0, Max: MaxStringSize}
	case types.ListKind, types.MapKind, types.DynKind:
		return &checker.SizeEstimate{Min: 0, Max: MaxCollectionSize}
	}
	return &checker.SizeEstimate{Min: 1, Max: 1}
}

// fitsFlow reports whether what an expression reads of flow, its labels or its
// history, is within the bounds flowBound states, its strings within
// MaxCollectionSize bytes, without converting it: an expression that reads only the
// labels does not look at the history.
func fitsFlow(flow *op.Flow, history bool) bool {
	if flow == nil {
		return true
	}
	if !history {
		return len(flow.Labels) <= engine.MaxRequestLabels && fitsStrings(flow.Labels...)
	}
	if len(flow.History) > engine.MaxHistory {
		return false
	}
	for i := range flow.History {
		h := &flow.History[i]
		if len(h.Labels) > engine.MaxRequestLabels || !fitsStrings(h.Labels...) ||
			!fitsStrings(h.StepID, h.Namespace, h.AgentName, h.Capability, h.Status) {
			return false
		}
	}
	return true
}

func fitsStrings(ss ...string) bool {
	for _, s := range ss {
		if len(s) > MaxCollectionSize {
			return false
		}
	}
	return true
}

// flowBound is the size the engine bounds a value of a flow by: labels and call.labels
// hold at most engine.MaxRequestLabels labels, history at most engine.MaxHistory steps
// (Program.fits checks it).
func flowBound(path []string) (uint64, bool) {
	switch {
	case len(path) == 1 && path[0] == varLabels, len(path) == 2 && path[0] == varCall && path[1] == "labels":
		return engine.MaxRequestLabels, true
	case len(path) == 1 && path[0] == varHistory:
		return engine.MaxHistory, true
	}
	return 0, false
}

func (sizeEstimator) EstimateCallCost(
	string, string, *checker.AstNode, []checker.AstNode,
) *checker.CallEstimate {
	return nil
}

// maxFitDepth bounds how deep fits looks into a value; deeper values do not fit.
const maxFitDepth = 32

// fits reports whether the variables the expression uses hold values within the sizes
// the compile-time estimate assumed: the request and the response at most
// MaxStringSize bytes (at least as many as characters); metadata, enrichments and the
// call (its JSON form, as the expression sees it) at most MaxCollectionSize members,
// and every value in them, which CEL sees as dyn, of size at most MaxCollectionSize (a
// string's bytes, a list's or map's elements, keys included), JSON-shaped all the way
// down. Of a map the expression only selects members of (metadata.tenant,
// has(call.parameters): a lookup costs the same in any map) only those members are
// checked. The estimate, which Compile held within the limit, then bounds the
// evaluation's cost. An expression that uses the plan, a step or a result does not fit
// (their values are not checked).
func (p *Program) fits(v *Vars) bool {
	for _, c := range p.sizes {
		switch c.name {
		case varNow, varPhase:
		case varRequest:
			if len(v.Request) > MaxStringSize {
				return false
			}
		case varResponse:
			if len(v.Response) > MaxStringSize {
				return false
			}
		case varMetadata:
			if !c.fitsObject(v.Metadata) {
				return false
			}
		case varEnrichments:
			if !c.fitsObject(v.Enrichments) {
				return false
			}
		case varCall:
			call, _ := v.ResolveName(varCall) // converted once: the evaluation reuses it
			m := call.(map[string]any)
			labels, _ := m["labels"].([]any) // none without a call
			if !c.fitsObject(m) || uint64(len(labels)) > engine.MaxRequestLabels {
				return false
			}
		case varLabels, varHistory:
			if !fitsFlow(v.Flow, c.name == varHistory) {
				return false
			}
		case varResult:
			x, _ := v.ResolveName(c.name)
			if !fitsValue(x, 0) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// sizeCheck is what fits checks of one variable: the whole value, or the members the
// expression selects.
type sizeCheck struct {
	name    string
	whole   bool
	members []string
}

// sizeChecks lists, in a stable order, what fits checks of each variable of reads.
func sizeChecks(reads map[string]*reads) []sizeCheck {
	out := make([]sizeCheck, 0, len(reads))
	for _, name := range slices.Sorted(maps.Keys(reads)) {
		r := reads[name]
		out = append(out, sizeCheck{name: name, whole: r.whole, members: slices.Sorted(maps.Keys(r.members))})
	}
	return out
}

// fitsObject reports whether what c reads of m fits: the whole map, or its members.
func (c *sizeCheck) fitsObject(m map[string]any) bool {
	if c.whole {
		return fitsValue(m, 0)
	}
	for _, k := range c.members {
		if !fitsValue(m[k], 1) {
			return false
		}
	}
	return true
}

// fitsValue reports whether x, a dyn value, has size at most MaxCollectionSize and so
// has every value in it.
func fitsValue(x any, depth int) bool {
	if depth > maxFitDepth {
		return false
	}
	switch t := x.(type) {
	case nil, bool, float64, int, int64:
		return true
	case string:
		return len(t) <= MaxCollectionSize
	case []any:
		if len(t) > MaxCollectionSize {
			return false
		}
		for _, e := range t {
			if !fitsValue(e, depth+1) {
				return false
			}
		}
		return true
	case map[string]any:
		if len(t) > MaxCollectionSize {
			return false
		}
		for k, e := range t {
			if len(k) > MaxCollectionSize || !fitsValue(e, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}
