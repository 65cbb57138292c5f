// Package reload keeps the live config generation: it compiles a config directory aside
// and swaps the result in with one atomic store, keeps the last good generation on any
// failure, and watches the directory so every save goes live (docs/semantics.md §9).
package reload

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
)

// Registry holds the live generation and the few before it that in-flight requests
// may still run on; it is the engine.Generations of the daemon. It is safe for
// concurrent use; readers never block.
type Registry struct {
	current atomic.Pointer[config.Generation]
	status  atomic.Pointer[Status]
	mu      sync.Mutex
	recent  []*config.Generation // oldest first, the live one last
	keep    int
	swapped chan struct{} // closed at the next Swap
	miss    atomic.Pointer[func(id string)]
}

// Status is the outcome of the last reload attempt.
type Status struct {
	// Result is "ok" or "error".
	Result string `json:"result"`
	// Error is the rendered config errors of a failed attempt.
	Error string `json:"error,omitempty"`
	// At is the time of the last attempt; LastGood the time the live generation went live.
	At       time.Time `json:"at"`
	LastGood time.Time `json:"last_good"`
	// Generation is the live generation id.
	Generation string `json:"generation"`
}

// MaxKeep bounds the generations a registry retains.
const MaxKeep = 64

// NewRegistry returns an empty registry that retains keep generations, the live one
// included (at least 1, at most MaxKeep).
func NewRegistry(keep int) *Registry {
	return &Registry{keep: min(max(keep, 1), MaxKeep), swapped: make(chan struct{})}
}

// OnMiss sets what Lookup does when no retained generation has the id asked for: f may
// make it live (a bundle source fetches its newest revision, which a request that
// opened on another replica may run on) and Lookup then looks once more. f runs on the
// caller's goroutine and must bound its own time; nil turns it off. Set it before the
// registry serves.
func (r *Registry) OnMiss(f func(id string)) {
	if f == nil {
		r.miss.Store(nil)
		return
	}
	r.miss.Store(&f)
}

// Swapped returns a channel that is closed when the next generation goes live. Callers
// that follow the live generation (the gateways, which run upstream connections for it)
// wait on it, read Current, and call Swapped again.
func (r *Registry) Swapped() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.swapped
}

// Current returns the live generation, nil before the first successful load.
func (r *Registry) Current() *config.Generation { return r.current.Load() }

// Get returns the retained generation with id, or nil when it has been retired.
func (r *Registry) Get(id string) *config.Generation {
	if g := r.current.Load(); g != nil && g.ID == id {
		return g
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, g := range r.recent {
		if g.ID == id {
			return g
		}
	}
	return nil
}

// Live implements engine.Generations: the live generation, nil before the first
// successful load.
func (r *Registry) Live() *engine.Generation {
	if g := r.Current(); g != nil {
		return &g.Generation
	}
	return nil
}

// Lookup implements engine.Generations: the retained generation with id, nil when it
// has been retired. A miss runs the OnMiss handler, when set, and looks once more: the
// driver looks up the generation of every request that goes on, so this is where a
// request that opened on another replica's newer revision finds it.
func (r *Registry) Lookup(id string) *engine.Generation {
	g := r.Get(id)
	if f := r.miss.Load(); g == nil && f != nil {
		(*f)(id)
		g = r.Get(id)
	}
	if g != nil {
		return &g.Generation
	}
	return nil
}

// Swap makes g the live generation with one atomic store and records the success.
func (r *Registry) Swap(g *config.Generation) {
	r.mu.Lock()
	kept := r.recent[:0]
	for _, old := range r.recent {
		if old.ID != g.ID {
			kept = append(kept, old)
		}
	}
	r.recent = append(kept, g)
	if n := len(r.recent) - r.keep; n > 0 {
		r.recent = append([]*config.Generation(nil), r.recent[n:]...)
	}
	r.current.Store(g)
	close(r.swapped)
	r.swapped = make(chan struct{})
	r.mu.Unlock()
	now := time.Now().UTC()
	r.status.Store(&Status{Result: "ok", At: now, LastGood: now, Generation: g.ID})
}

// Fail records a failed attempt; the live generation keeps serving.
func (r *Registry) Fail(rendered string) {
	s := Status{Result: "error", Error: rendered, At: time.Now().UTC()}
	if prev := r.status.Load(); prev != nil {
		s.LastGood, s.Generation = prev.LastGood, prev.Generation
	}
	r.status.Store(&s)
}

// Status returns the outcome of the last attempt (zero before any).
func (r *Registry) Status() Status {
	if s := r.status.Load(); s != nil {
		return *s
	}
	return Status{}
}
