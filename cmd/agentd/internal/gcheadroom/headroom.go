// Package gcheadroom keeps a floor under the Go garbage collector's headroom: the heap
// may grow by at least a fixed number of bytes past the live heap before the next cycle
// starts, where the runtime's default (GOGC=100) lets it grow by the live heap's size.
//
// A daemon that keeps request states and records in process has a live heap of tens of
// megabytes that every cycle marks again, while each request allocates a few kilobytes:
// at the default, a cycle starts every live-heap's worth of allocation, and marking the
// retained data can be a fifth of the CPU a request costs. With a floor of H bytes the
// cycles come at most once per H bytes allocated, so while the live heap is below H the
// collector runs less often, at the price of at most H bytes of heap more than the
// default would keep. Once the live heap exceeds H, the percentage is the default's and
// nothing changes.
//
// After every cycle the collector's percentage is set to what gives the floor over the
// live heap that cycle marked (runtime/metrics /gc/heap/live:bytes), never below 100.
// A GOGC environment variable is the operator's choice and turns the floor off; a
// GOMEMLIMIT still bounds the heap as the runtime documents.
package gcheadroom

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// base is the runtime's default percentage, the least the floor sets.
const base = 100

// maxPercent bounds the percentage over a nearly empty heap.
const maxPercent = 100_000

// Percent returns the GOGC percentage that lets a heap of live bytes grow by at least
// headroom bytes (and by at least the default's 100%) before the next cycle.
func Percent(live, headroom uint64) int {
	if live == 0 {
		return maxPercent
	}
	p := math.Ceil(float64(headroom) / float64(live) * 100)
	return int(min(max(p, base), maxPercent))
}

// Floor is a running headroom floor; Stop restores the default percentage.
type Floor struct {
	headroom uint64
	mu       sync.Mutex // guards what follows: Stop and a cycle's adjustment
	stopped  bool
	percent  int // what the floor last set
	sample   []metrics.Sample
}

// Start keeps headroom bytes under the collector from the next cycle on. It returns
// nil, and changes nothing, when headroom is 0 or the GOGC environment variable is set.
func Start(headroom uint64) *Floor {
	if headroom == 0 || os.Getenv("GOGC") != "" {
		return nil
	}
	f := &Floor{headroom: headroom, percent: base, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	f.arm()
	return f
}

// arm calls adjust after the next cycle: a cleanup runs once the collector has found
// its object unreachable, and each adjustment arms the next one.
func (f *Floor) arm() {
	runtime.AddCleanup(new([32]byte), func(f *Floor) { f.adjust() }, f)
}

func (f *Floor) adjust() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return
	}
	metrics.Read(f.sample)
	if f.sample[0].Value.Kind() == metrics.KindUint64 {
		// Setting the percentage takes the heap lock; skip changes under 5%.
		if p := Percent(f.sample[0].Value.Uint64(), f.headroom); p*20 < f.percent*19 || p*20 > f.percent*21 {
			debug.SetGCPercent(p)
			f.percent = p
		}
	}
	f.arm()
}

// Headroom returns the floor in bytes (0 for a nil Floor).
func (f *Floor) Headroom() uint64 {
	if f == nil {
		return 0
	}
	return f.headroom
}

// Stop ends the floor and restores the default percentage. It is safe on a nil Floor
// and more than once.
func (f *Floor) Stop() {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.stopped {
		f.stopped = true
		debug.SetGCPercent(base)
	}
}
