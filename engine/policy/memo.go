package policy

import (
	"crypto/sha256"
	"slices"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/agentd-dev/agentd/engine"
)

// inputUse is what a bundle's compiled policies read: the whole input, or the top-level
// input keys read whole and the members of input.plan read on their own (a policy that
// only looks at input.plan.steps does not depend on plan_id), and whether any
// non-deterministic built-in (time, random, uuid, ...) is called. It is computed once
// per bundle.
type inputUse struct {
	deterministic bool
	whole         bool
	keys          []string
	planFields    []string
}

// analyzeInput walks every compiled module. A reference reads everything under its
// constant prefix; any use of the input it cannot narrow to a constant top-level key (a
// bare `input`, a variable key, a `with input` override) counts as reading the whole
// input.
func analyzeInput(c *ast.Compiler) inputUse {
	use := inputUse{deterministic: true}
	keys, planFields := map[string]bool{}, map[string]bool{}
	for _, m := range c.Modules {
		ast.WalkRefs(m, func(ref ast.Ref) bool {
			if !ref[0].Equal(ast.InputRootDocument) {
				return false
			}
			if len(ref) < 2 {
				use.whole = true
				return false
			}
			key, ok := ref[1].Value.(ast.String)
			if !ok {
				use.whole = true
				return false
			}
			if field, ok := refString(ref, 2); ok && key == "plan" {
				planFields[field] = true
			} else {
				keys[string(key)] = true
			}
			return false
		})
		ast.WalkWiths(m, func(w *ast.With) bool {
			if ref, ok := w.Target.Value.(ast.Ref); ok && ref.HasPrefix(ast.InputRootRef) {
				use.whole = true
			}
			return false
		})
		ast.WalkExprs(m, func(e *ast.Expr) bool {
			if e.IsCall() && nondeterministic(e.Operator().String()) {
				use.deterministic = false
			}
			return false
		})
		ast.WalkTerms(m, func(t *ast.Term) bool {
			if call, ok := t.Value.(ast.Call); ok && len(call) > 0 && nondeterministic(call[0].String()) {
				use.deterministic = false
			}
			return false
		})
	}
	use.keys = sortedKeys(keys)
	if !keys["plan"] {
		use.planFields = sortedKeys(planFields)
	}
	return use
}

func refString(ref ast.Ref, i int) (string, bool) {
	if i >= len(ref) {
		return "", false
	}
	s, ok := ref[i].Value.(ast.String)
	return string(s), ok
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func nondeterministic(name string) bool {
	b, ok := ast.BuiltinMap[name]
	return ok && b.Nondeterministic
}

// Memoizable reports whether decisions of q may be cached: every module of its bundle
// is free of non-deterministic built-ins. Data is fixed per bundle, so a decision then
// depends on the input alone.
func (q *Query) Memoizable() bool { return q.use.deterministic }

// PlanMemo caches the plan decisions of one deterministic query, keyed by a SHA-256 of
// a canonical encoding of only the plan-review input parts the bundle's policies read
// (for the stock allow-list: the plan's steps, not its id, nor the request text). A memo belongs to
// one Query and so to one config generation. It holds at most size entries and is safe
// for concurrent use.
type PlanMemo struct {
	use    inputUse
	size   int
	shards [16]memoShard
}

type memoShard struct {
	mu      sync.Mutex
	entries map[[32]byte]PlanDecision
}

// NewPlanMemo returns a memo for q's decisions, or nil when q is not Memoizable.
func (q *Query) NewPlanMemo(size int) *PlanMemo {
	if !q.use.deterministic {
		return nil
	}
	m := &PlanMemo{use: q.use, size: max(size/16, 1)}
	for i := range m.shards {
		m.shards[i].entries = make(map[[32]byte]PlanDecision)
	}
	return m
}

// Key hashes the parts of a plan-review input (see PlanInput) that the policies read,
// with an unambiguous canonical encoding and SHA-256.
func (m *PlanMemo) Key(plan *engine.RoutingPlan, phase int, request string, metadata, enrichments map[string]any) ([32]byte, error) {
	c := canonPool.Get().(*canon)
	defer func() {
		c.buf = c.buf[:0]
		canonPool.Put(c)
	}()
	reads := func(key string) bool {
		if m.use.whole || slices.Contains(m.use.keys, key) {
			c.field(key)
			return true
		}
		return false
	}
	var err error
	if reads("plan") {
		err = c.plan(plan)
	}
	for _, f := range m.use.planFields {
		if err == nil && !m.use.whole {
			c.field("plan." + f)
			err = c.planField(plan, f)
		}
	}
	if err == nil && reads("phase") {
		c.int(int64(phase))
	}
	if err == nil && reads("request") {
		c.str(request)
	}
	if err == nil && reads("metadata") {
		err = c.object(metadata)
	}
	if err == nil && reads("enrichments") {
		err = c.object(enrichments)
	}
	if err != nil {
		return [32]byte{}, err
	}
	return sha256.Sum256(c.buf), nil
}

// Get returns the decision stored under key. A decision's Plan is shared: callers must
// copy it before changing it.
func (m *PlanMemo) Get(key [32]byte) (PlanDecision, bool) {
	s := &m.shards[key[0]%16]
	s.mu.Lock()
	d, ok := s.entries[key]
	s.mu.Unlock()
	return d, ok
}

// Put stores d under key, evicting an arbitrary entry of the shard when it is full.
func (m *PlanMemo) Put(key [32]byte, d PlanDecision) {
	s := &m.shards[key[0]%16]
	s.mu.Lock()
	if _, ok := s.entries[key]; !ok && len(s.entries) >= m.size {
		for k := range s.entries {
			delete(s.entries, k)
			break
		}
	}
	s.entries[key] = d
	s.mu.Unlock()
}
