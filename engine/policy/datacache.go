package policy

import (
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
)

// dataCache is the topdown.BaseCache every evaluation of a bundle's queries shares: the
// values read from the bundle's store by the references that read them. OPA's own cache
// lives for one evaluation, so that each evaluation finds, reads and caches again what
// the last one read; the bundle's store never changes after Compile, so what one
// evaluation read answers every later one. It keeps OPA's semantics (a trie: a value
// cached at a reference answers the references below it) and holds at most
// maxDataCacheNodes nodes: past that it answers from what it holds and keeps nothing
// new, so that references an input spells out (data.x[input.k], with k spelled in
// ever new ways) cannot grow it without bound. It is safe for concurrent use.
type dataCache struct {
	mu         sync.RWMutex
	root       dataCacheNode
	nodes, max int
}

type dataCacheNode struct {
	value    ast.Value
	children map[ast.Value]*dataCacheNode
}

// maxDataCacheNodes bounds a dataCache: room for the references a policy reads of an
// allow-list with hundreds of thousands of entries.
const maxDataCacheNodes = 1 << 20

func newDataCache(max int) *dataCache { return &dataCache{max: max} }

// Get returns the value cached at ref or above it (found below that value), or nil.
func (c *dataCache) Get(ref ast.Ref) ast.Value {
	c.mu.RLock()
	defer c.mu.RUnlock()
	node := &c.root
	for i := range ref {
		if node = node.children[ref[i].Value]; node == nil {
			return nil
		}
		if node.value != nil {
			v, err := node.value.Find(ref[i+1:])
			if err != nil {
				return nil
			}
			return v
		}
	}
	return nil
}

// Put caches value at ref, unless a value above ref is cached (it answers ref) or the
// cache is full. Nodes a value replaces stay counted: the bound is on nodes ever made.
func (c *dataCache) Put(ref ast.Ref, value ast.Value) {
	c.mu.Lock()
	defer c.mu.Unlock()
	node := &c.root
	for i := range ref {
		if node.value != nil {
			return // a value above ref answers it already (Get stops there)
		}
		child := node.children[ref[i].Value]
		if child == nil {
			if c.nodes >= c.max {
				return
			}
			if node.children == nil {
				node.children = map[ast.Value]*dataCacheNode{}
			}
			child = &dataCacheNode{}
			node.children[ref[i].Value] = child
			c.nodes++
		}
		node = child
	}
	node.value, node.children = value, nil
}
