package policy

import (
	"crypto/sha256"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/agentd-dev/agentd/engine"
)

// deterministic reports whether the compiled policies refer to no non-deterministic
// built-in (time, random, uuid, ...), whether called or named anywhere else (a with may
// substitute one for a function): data is fixed per bundle, so their decisions then
// depend on the input alone.
func deterministic(c *ast.Compiler) bool {
	ok := true
	for _, m := range c.Modules {
		ast.WalkRefs(m, func(r ast.Ref) bool {
			if nondeterministic(r.String()) {
				ok = false
			}
			return !ok
		})
	}
	return ok
}

// clockBuiltins read the clock although OPA does not mark them non-deterministic:
// certificate chain verification checks validity periods against the current time
// unless the options give one.
var clockBuiltins = []string{
	ast.CryptoX509ParseAndVerifyCertificates.Name,
	ast.CryptoX509ParseAndVerifyCertificatesWithOptions.Name,
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

func nondeterministic(name string) bool {
	b, ok := ast.BuiltinMap[name]
	return ok && b.Nondeterministic || slices.Contains(clockBuiltins, name)
}

// Memoizable reports whether decisions of q may be cached: every module of its bundle
// is free of non-deterministic built-ins. Data is fixed per bundle, so a decision then
// depends on the input alone.
func (q *Query) Memoizable() bool { return q.deterministic }

// PlanMemo caches the plan decisions of one deterministic query, keyed by a SHA-256 of
// a canonical encoding of only the input parts its evaluation may observe (for the stock
// allow-list: each step's id, namespace, agent and capability; not the plan id, the
// step instructions nor the request text). A memo belongs to one Query and so to one
// config generation. It holds at most size entries and is safe for concurrent use.
type PlanMemo struct {
	reads  *readNode
	size   int
	shards [16]memoShard
}

type memoShard struct {
	mu      sync.Mutex
	entries map[[32]byte]PlanDecision
}

// NewPlanMemo returns a memo for q's plan decisions, or nil when q is not Memoizable.
func (q *Query) NewPlanMemo(size int) *PlanMemo {
	if !q.deterministic {
		return nil
	}
	m := &PlanMemo{reads: analyzeReads(q.compiler, q.ref, q.members), size: max(size/16, 1)}
	for i := range m.shards {
		m.shards[i].entries = make(map[[32]byte]PlanDecision)
	}
	return m
}

// Reads lists every input path of the read tree, as readNode.paths renders it.
func (m *PlanMemo) Reads() []string { return m.reads.paths("input") }

// KeyPaths lists, for people, the input paths the memo's keys are made of: a value read
// whole by its path, a value of which only the type (a scalar's value, an array's
// length) is read with " (type)", and one whose members may be counted with " (size)".
func (m *PlanMemo) KeyPaths() []string {
	var out []string
	m.reads.keyPaths("input", &out)
	return out
}

// PlanKey hashes, with an unambiguous canonical encoding and SHA-256, the parts of
// PlanInput(plan, phase, request, metadata, enrichments) that the query's evaluation
// may observe, without building the Rego value: only what is read whole is converted.
// It fails where PlanInput fails, so that a memo hit never answers an input evaluation
// would reject.
func (m *PlanMemo) PlanKey(plan *engine.RoutingPlan, phase int, request string, metadata, enrichments map[string]any) ([32]byte, error) {
	c := canonPool.Get().(*canon)
	defer func() {
		c.buf = c.buf[:0]
		canonPool.Put(c)
	}()
	if err := checkPlanInput(plan, metadata, enrichments); err != nil {
		return [32]byte{}, fmt.Errorf("policy: plan input: %w", err)
	}
	var root [5]member
	if err := c.projectMembers(rootMembers(plan, phase, request, metadata, enrichments, &root), m.reads); err != nil {
		return [32]byte{}, fmt.Errorf("policy: plan input: %w", err)
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
