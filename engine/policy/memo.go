package policy

import (
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/policy/reads"
)

// PlanMemo caches the plan decisions of one deterministic query, keyed by a canonical
// encoding (reads.Tree.AppendKey, at most 512 bytes) of only the input parts its
// evaluation may observe (for the stock allow-list: each step's id, namespace, agent
// and capability; not the plan id, the step instructions nor the request text). A memo
// belongs to one Query and so to one config generation. It holds at most size entries
// and is safe for concurrent use.
type PlanMemo struct {
	reads  *reads.Tree
	size   int
	shards [16]memoShard
	// longKeys is set once an encoding did not fit keyOnStack.
	longKeys atomic.Bool
}

// memoShard holds entries by their key's hash (maphash with keySeed, which hashes a
// key alike as bytes and as a string), the one hash of a key a lookup computes: it
// picks the shard and the entry. Keys whose hashes are equal share an entry, the last
// one Put; an entry answers only its own key.
type memoShard struct {
	mu      sync.Mutex
	entries map[uint64]memoEntry
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
	for i := range m.shards {
		m.shards[i].entries = make(map[uint64]memoEntry)
	}
	return m
}

// Reads returns the input paths the memo's keys are made of.
func (m *PlanMemo) Reads() *reads.Tree { return m.reads }

// PlanKey is the key of PlanInput(plan, phase, request, metadata, enrichments)
// (reads.Tree.Key), computed without building the Rego value: the key Lookup looks up,
// for callers that need the key alone. It fails where the memo's
// PlanInput fails: on a part the evaluation may observe that does not convert.
func (m *PlanMemo) PlanKey(plan *engine.RoutingPlan, phase int, request string, metadata, enrichments map[string]any) (string, error) {
	in := planInput{plan, phase, request, metadata, enrichments}
	key, err := m.reads.Key(planInputs.View(&in))
	if err != nil {
		return "", inputError(err)
	}
	return key, nil
}

// Lookup returns the decision stored under the key of the input (PlanKey's), and on a
// miss that key, to Put the decision under once evaluated. A hit allocates nothing. A
// decision's Plan is shared: callers must copy it before changing it.
func (m *PlanMemo) Lookup(plan *engine.RoutingPlan, phase int, request string, metadata, enrichments map[string]any) (d PlanDecision, key string, hit bool, err error) {
	in := planInput{plan, phase, request, metadata, enrichments}
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

// lookup is Lookup with the key encoded in buf, which it returns, grown as needed.
func (m *PlanMemo) lookup(buf []byte, in *planInput) (d PlanDecision, key string, hit bool, _ []byte, err error) {
	if buf, err = m.reads.AppendKey(buf, planInputs.View(in)); err != nil {
		return PlanDecision{}, "", false, buf, inputError(err)
	}
	if cap(buf) > keyOnStack && !m.longKeys.Load() {
		m.longKeys.Store(true)
	}
	h := maphash.Bytes(keySeed, buf)
	s := m.shard(h)
	s.mu.Lock()
	e, found := s.entries[h]
	s.mu.Unlock()
	if found && e.key == string(buf) {
		return e.d, "", true, buf, nil
	}
	return PlanDecision{}, string(buf), false, buf, nil
}

// keyOnStack is the room Lookup gives a key's encoding on its stack: enough for every
// key kept raw (reads.MaxRawKey). Once a memo meets a longer encoding, which grows onto
// the heap before it is hashed down, it encodes in pooled buffers (keyBuffers): inputs
// of one kind tend to come again.
const keyOnStack = reads.MaxRawKey

// keyBuffers recycles the buffers of long encodings, up to maxKeyBuffer bytes: an input
// read whole can be large, and the pool should not keep the largest for good.
var keyBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 4*keyOnStack); return &b }}

const maxKeyBuffer = 64 << 10

// PlanInput is the input the memo's query is evaluated on (reads.Tree.Input): the
// parts of the plan-review input its evaluation may observe, nothing else, so that
// what no evaluation reads is never converted, on a memo hit or a miss. Evaluations
// decide on it as on the whole input (policy.PlanInput), and its key is PlanKey's.
func (m *PlanMemo) PlanInput(plan *engine.RoutingPlan, phase int, request string, metadata, enrichments map[string]any) (ast.Value, error) {
	in := planInput{plan, phase, request, metadata, enrichments}
	input, err := m.reads.Input(planInputs.View(&in))
	if err != nil {
		return nil, inputError(err)
	}
	return input, nil
}

// inputError is the error of an input that does not convert.
func inputError(err error) error { return fmt.Errorf("policy: plan input: %w", err) }

// Put stores d under key, evicting an arbitrary entry of the shard when it is full.
func (m *PlanMemo) Put(key string, d PlanDecision) {
	h := maphash.String(keySeed, key)
	s := m.shard(h)
	s.mu.Lock()
	if _, ok := s.entries[h]; !ok && len(s.entries) >= m.size {
		for k := range s.entries {
			delete(s.entries, k)
			break
		}
	}
	s.entries[h] = memoEntry{key, d}
	s.mu.Unlock()
}
