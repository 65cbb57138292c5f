package policy

import (
	"fmt"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
	"github.com/agentd-dev/agentd/engine/policy/reads"
)

// PlanMemo caches the plan decisions of one deterministic query, keyed by a canonical
// encoding (reads.Tree.AppendKey, at most 512 bytes) of only the input parts its
// evaluation may observe (for the stock allow-list: each step's id, namespace, agent
// and capability; not the plan id, the step instructions nor the request text).
// Decisions that allow the plan are keyed by less when the query is a package whose
// deny is built by `deny contains` rules alone: by what an evaluation in which deny
// comes out empty may observe (reads.AnalyzeAllowed; for the stock allow-list, a step's
// id is then observed by its type only, as it only names the step in violations), so
// that a plan with new step ids over known operations is answered too. A memo belongs
// to one Query and so to one config generation. It holds at most size entries and is
// safe for concurrent use.
type PlanMemo struct {
	reads *reads.Tree
	// allowed keys allowed decisions; nil when it would read what reads does.
	allowed *reads.Tree
	size    int
	shards  [16]memoShard
	// longKeys is set once an encoding did not fit keyOnStack.
	longKeys atomic.Bool
}

// MemoKey is what a Lookup that missed leaves to Put: the input's keys.
type MemoKey struct {
	// Exact is the key of the parts any evaluation may observe (of Reads).
	Exact string
	// Allowed is the key of the parts an evaluation allowing the plan may observe (of
	// AllowedReads); "" when the memo keys allowed decisions by Exact too.
	Allowed string
}

// keyKind says which tree made a key: keys of the two trees are kept apart, as equal
// encodings under different trees say nothing about each other's inputs.
type keyKind int

const (
	exactKey keyKind = iota
	allowedKey
)

// memoShard holds entries by their key's kind and hash (maphash with keySeed, which
// hashes a key alike as bytes and as a string), the one hash of a key a lookup
// computes: it picks the shard and the entry. Keys whose hashes are equal share an
// entry, the last one Put; an entry answers only its own key.
type memoShard struct {
	mu      sync.Mutex
	entries [2]map[uint64]memoEntry
}

type memoEntry struct {
	key string
	d   PlanDecision
}

var keySeed = maphash.MakeSeed()

func (m *PlanMemo) shard(h uint64) *memoShard { return &m.shards[h%uint64(len(m.shards))] }

// NewPlanMemo returns a memo for q's plan decisions, or nil when a module of q's bundle
// refers to a non-deterministic built-in (reads.Deterministic): data is fixed per
// bundle, so decisions then depend on the input alone.
func (q *Query) NewPlanMemo(size int) *PlanMemo {
	if !q.deterministic {
		return nil
	}
	m := &PlanMemo{reads: reads.Analyze(q.compiler, q.ref, q.members), size: max(size/16, 1)}
	if allowed := reads.AnalyzeAllowed(q.compiler, q.ref, q.members); allowed != nil && !slices.Equal(allowed.Paths(), m.reads.Paths()) {
		m.allowed = allowed
	}
	for i := range m.shards {
		for k := range m.shards[i].entries {
			m.shards[i].entries[k] = make(map[uint64]memoEntry)
		}
	}
	return m
}

// Reads returns the input paths the memo's exact keys are made of.
func (m *PlanMemo) Reads() *reads.Tree { return m.reads }

// AllowedReads returns the input paths keys of allowed decisions are made of, or nil
// when they are Reads.
func (m *PlanMemo) AllowedReads() *reads.Tree { return m.allowed }

// PlanKey returns the keys of PlanInput(plan, phase, request, metadata, enrichments)
// (reads.Tree.Key), computed without building the Rego value: the keys Lookup looks up,
// for callers that need the keys alone. It fails where the memo's PlanInput fails: on a
// part the evaluation may observe that does not convert.
func (m *PlanMemo) PlanKey(plan *engine.RoutingPlan, phase int, request string, metadata, enrichments map[string]any, flow *op.Flow) (MemoKey, error) {
	in := newPlanInput(plan, phase, request, metadata, enrichments, flow)
	view := planInputs.View(&in)
	var key MemoKey
	var err error
	if m.allowed != nil {
		if key.Allowed, err = m.allowed.Key(view); err != nil {
			return MemoKey{}, inputError(err)
		}
	}
	if key.Exact, err = m.reads.Key(view); err != nil {
		return MemoKey{}, inputError(err)
	}
	return key, nil
}

// Lookup returns the decision stored under a key of the input (PlanKey's: an allowed
// decision under Allowed, any other under Exact), and on a miss the keys, to Put the
// decision under once evaluated. A hit allocates nothing. A decision's Plan is shared:
// callers must copy it before changing it.
func (m *PlanMemo) Lookup(plan *engine.RoutingPlan, phase int, request string, metadata, enrichments map[string]any, flow *op.Flow) (d PlanDecision, key MemoKey, hit bool, err error) {
	in := newPlanInput(plan, phase, request, metadata, enrichments, flow)
	if m.longKeys.Load() {
		pooled := keyBuffers.Get().(*[]byte)
		var buf []byte
		d, key, hit, buf, err = m.lookup((*pooled)[:0], &in)
		if cap(buf) <= maxKeyBuffer {
			*pooled = buf[:0]
			keyBuffers.Put(pooled)
		}
		return d, key, hit, err
	}
	var stack [keyOnStack]byte
	d, key, hit, _, err = m.lookup(stack[:0], &in)
	return d, key, hit, err
}

// lookup is Lookup with the keys encoded in buf, which it returns, grown as needed.
func (m *PlanMemo) lookup(buf []byte, in *planInput) (d PlanDecision, key MemoKey, hit bool, _ []byte, err error) {
	view := planInputs.View(in)
	// The allowed key, when there is one, is buf[:n] and the exact key buf[n:]: both
	// stay in buf, so that neither becomes a string before a miss.
	n := 0
	if m.allowed != nil {
		if buf, err = m.allowed.AppendKey(buf[:0], view); err != nil {
			return PlanDecision{}, MemoKey{}, false, buf, inputError(err)
		}
		m.noteLength(buf)
		if d, hit = m.get(allowedKey, buf); hit {
			return d, MemoKey{}, true, buf, nil
		}
		n = len(buf)
	}
	if buf, err = m.reads.AppendKey(buf, view); err != nil {
		return PlanDecision{}, MemoKey{}, false, buf, inputError(err)
	}
	m.noteLength(buf)
	if d, hit = m.get(exactKey, buf[n:]); hit {
		return d, MemoKey{}, true, buf, nil
	}
	if m.allowed != nil {
		key.Allowed = string(buf[:n])
	}
	key.Exact = string(buf[n:])
	return PlanDecision{}, key, false, buf, nil
}

// noteLength switches the memo to pooled buffers once keys outgrow the stack.
func (m *PlanMemo) noteLength(buf []byte) {
	if cap(buf) > keyOnStack && !m.longKeys.Load() {
		m.longKeys.Store(true)
	}
}

// get returns the decision stored under the key of this kind.
func (m *PlanMemo) get(kind keyKind, key []byte) (PlanDecision, bool) {
	h := maphash.Bytes(keySeed, key)
	s := m.shard(h)
	s.mu.Lock()
	e, found := s.entries[kind][h]
	s.mu.Unlock()
	return e.d, found && e.key == string(key)
}

// keyOnStack is the room Lookup gives keys' encodings on its stack: enough for both
// keys of an input kept raw (reads.MaxRawKey each). Once a memo meets a longer
// encoding, which grows onto the heap before it is hashed down, it encodes in pooled
// buffers (keyBuffers): inputs of one kind tend to come again.
const keyOnStack = 2 * reads.MaxRawKey

// keyBuffers recycles the buffers of long encodings, up to maxKeyBuffer bytes: an input
// read whole can be large, and the pool should not keep the largest for good.
var keyBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 4*keyOnStack); return &b }}

const maxKeyBuffer = 64 << 10

// PlanInput is the input the memo's query is evaluated on (reads.Tree.Input): the
// parts of the plan-review input its evaluation may observe, nothing else, so that
// what no evaluation reads is never converted, on a memo hit or a miss. Evaluations
// decide on it as on the whole input (policy.PlanInput), and its key is PlanKey's.
func (m *PlanMemo) PlanInput(plan *engine.RoutingPlan, phase int, request string, metadata, enrichments map[string]any, flow *op.Flow) (ast.Value, error) {
	in := newPlanInput(plan, phase, request, metadata, enrichments, flow)
	input, err := m.reads.Input(planInputs.View(&in))
	if err != nil {
		return nil, inputError(err)
	}
	return input, nil
}

// inputError is the error of an input that does not convert.
func inputError(err error) error { return fmt.Errorf("policy: plan input: %w", err) }

// Put stores d, the decision of an input with these keys (Lookup's on a miss): under
// key.Allowed when d allows the plan and there is one, else under key.Exact. When the
// shard is full it evicts an arbitrary entry, of the same kind when it has one.
func (m *PlanMemo) Put(key MemoKey, d PlanDecision) {
	kind, k := exactKey, key.Exact
	if d.Allowed() && key.Allowed != "" {
		kind, k = allowedKey, key.Allowed
	}
	h := maphash.String(keySeed, k)
	s := m.shard(h)
	s.mu.Lock()
	entries := s.entries[kind]
	if _, ok := entries[h]; !ok && len(s.entries[exactKey])+len(s.entries[allowedKey]) >= m.size {
		evict := entries
		if len(evict) == 0 {
			evict = s.entries[1-kind]
		}
		for h := range evict {
			delete(evict, h)
			break
		}
	}
	entries[h] = memoEntry{k, d}
	s.mu.Unlock()
}
