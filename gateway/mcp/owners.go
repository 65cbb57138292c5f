package mcp

import (
	"sync"
	"time"
)

// Session defaults (Config).
const (
	// DefaultSessionIdle closes an HTTP session nobody has called for that long.
	DefaultSessionIdle = 5 * time.Minute
	// DefaultMaxSessions bounds the HTTP sessions open at once in one gateway.
	DefaultMaxSessions = 1000
	// DefaultMaxSessionsPerCaller bounds the HTTP sessions one caller has open at once.
	DefaultMaxSessionsPerCaller = 32
)

// owner is who opened an HTTP session: the caller (Config.Caller) and the tenant it
// was confined to ("" for none). Only the same caller, confined alike, may use it.
type owner struct {
	caller, tenant string
}

// owners keeps the owner of every open HTTP session and bounds how many are open, per
// caller and in all. A slot is reserved before the transport may open a session and
// kept while it is open; it is safe for concurrent use.
type owners struct {
	max, perCaller int

	mu       sync.Mutex
	open     int
	byCaller map[string]int
	sessions map[string]owner  // MCP session id -> owner
	origins  map[string]string // MCP session id -> the origin it was opened at
}

func newOwners(max, perCaller int) *owners {
	return &owners{max: max, perCaller: perCaller, byCaller: map[string]int{}, sessions: map[string]owner{}, origins: map[string]string{}}
}

// reserve takes a slot for a session caller may open, or reports which bound is
// reached: "gateway" (max) or "caller" (perCaller).
func (o *owners) reserve(caller string) (full string, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case o.byCaller[caller] >= o.perCaller:
		return "caller", false
	case o.open >= o.max:
		return "gateway", false
	}
	o.open++
	o.byCaller[caller]++
	return "", true
}

// release gives back a slot of caller's: one its session no longer holds, or one no
// session was opened with.
func (o *owners) release(caller string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.open--
	if o.byCaller[caller]--; o.byCaller[caller] <= 0 {
		delete(o.byCaller, caller)
	}
}

// opened records the owner of the session id, which holds its caller's slot, and the
// origin (scheme and host) of the HTTP request that opened it.
func (o *owners) opened(id string, who owner, origin string) {
	o.mu.Lock()
	o.sessions[id] = who
	o.origins[id] = origin
	o.mu.Unlock()
}

// closed forgets session id and gives back its slot.
func (o *owners) closed(id string) {
	o.mu.Lock()
	who, ok := o.sessions[id]
	delete(o.sessions, id)
	delete(o.origins, id)
	o.mu.Unlock()
	if ok {
		o.release(who.caller)
	}
}

// of returns the owner of session id, false for a session it does not know.
func (o *owners) of(id string) (owner, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	who, ok := o.sessions[id]
	return who, ok
}

// originOf returns the origin session id was opened at, "" for a session it does not
// know.
func (o *owners) originOf(id string) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.origins[id]
}

// count returns the sessions open: of tenant only when confined.
func (o *owners) count(tenant string, confined bool) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !confined {
		return o.open
	}
	n := 0
	for _, who := range o.sessions {
		if who.tenant == tenant {
			n++
		}
	}
	return n
}
