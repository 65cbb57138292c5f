package gcheadroom

import (
	"math"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct {
		name           string
		live, headroom uint64
		want           int
	}{
		{"live heap below the floor: the floor over it", 64 * mb, 128 * mb, 200},
		{"rounded up, never under the floor", 3 * mb, 10 * mb, 334},
		{"live heap at the floor: the default", 128 * mb, 128 * mb, 100},
		{"live heap above the floor: the default", 700 * mb, 128 * mb, 100},
		{"a nearly empty heap: bounded", 1, 128 * mb, maxPercent},
		{"no live heap read yet: bounded", 0, 128 * mb, maxPercent},
		{"a floor near the largest count: bounded, no overflow", 64 * mb, math.MaxUint64, maxPercent},
	} {
		if got := Percent(c.live, c.headroom); got != c.want {
			t.Errorf("%s: Percent(%d, %d) = %d, want %d", c.name, c.live, c.headroom, got, c.want)
		}
	}
}

// gogc reads the collector's percentage as the runtime applies it.
func gogc() uint64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// settle runs cycles until the percentage is the floor's for the live heap (within the
// 5% the floor leaves alone) and returns it, or fails after a generous deadline: the
// adjustment runs after a cycle, on the runtime's cleanup goroutine.
func settle(t *testing.T, headroom uint64) uint64 {
	t.Helper()
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var got, want uint64
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		runtime.GC()
		metrics.Read(live)
		got, want = gogc(), uint64(Percent(live[0].Value.Uint64(), headroom))
		if got*20 >= want*19 && got*20 <= want*21 {
			return got
		}
	}
	t.Fatalf("GOGC = %d, want about %d for %d live bytes", got, want, live[0].Value.Uint64())
	return 0
}

// TestFloor_FollowsTheLiveHeap: after each cycle the collector runs at the percentage
// that gives the floor over the live heap, as the live heap grows; Stop restores the
// default and nothing adjusts it after.
func TestFloor_FollowsTheLiveHeap(t *testing.T) {
	t.Setenv("GOGC", "")
	const headroom = 256 << 20
	f := Start(headroom)
	if f == nil {
		t.Fatal("Start returned nil without GOGC")
	}
	defer f.Stop()
	if got := f.Headroom(); got != headroom {
		t.Fatalf("Headroom() = %d, want %d", got, headroom)
	}
	small := settle(t, headroom)
	retained := make([]byte, 128<<20) // the live heap grows by half the floor
	bigger := settle(t, headroom)
	runtime.KeepAlive(retained)
	if small <= 2*bigger || bigger < 150 {
		t.Errorf("GOGC over a small live heap %d, over 128 MiB more %d: want the second about 200 and under half the first", small, bigger)
	}
	f.Stop()
	f.Stop()
	if got := gogc(); got != base {
		t.Errorf("GOGC after Stop = %d, want %d", got, base)
	}
	runtime.GC()
	runtime.GC()
	if got := gogc(); got != base {
		t.Errorf("GOGC after Stop and two cycles = %d, want %d (a stopped floor adjusts nothing)", got, base)
	}
}

func TestStart_OffByChoice(t *testing.T) {
	t.Setenv("GOGC", "50")
	if f := Start(1 << 30); f != nil {
		f.Stop()
		t.Error("Start with GOGC set returned a floor")
	}
	t.Setenv("GOGC", "")
	if f := Start(0); f != nil {
		f.Stop()
		t.Error("Start(0) returned a floor")
	}
	var none *Floor
	none.Stop()
	if none.Headroom() != 0 {
		t.Error("a nil Floor has headroom")
	}
}
