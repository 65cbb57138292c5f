package reload_test

import (
	"strconv"
	"sync"
	"testing"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/config/reload"
	"github.com/agentd-dev/agentd/engine"
)

func gens(n int) []*config.Generation {
	out := make([]*config.Generation, n)
	for i := range out {
		out[i] = &config.Generation{Generation: engine.Generation{ID: "g-" + strconv.Itoa(i+1)}}
	}
	return out
}

func TestRegistry_EmptyBeforeFirstSwap(t *testing.T) {
	reg := reload.NewRegistry(2)
	if reg.Current() != nil || reg.Get("g-1") != nil {
		t.Fatal("an empty registry returned a generation")
	}
	if st := reg.Status(); st != (reload.Status{}) {
		t.Fatalf("status before any attempt = %+v", st)
	}
}

func TestRegistry_GetRetainedAndRetired(t *testing.T) {
	reg := reload.NewRegistry(2)
	g := gens(3)
	for _, x := range g {
		reg.Swap(x)
	}
	if reg.Current() != g[2] {
		t.Fatalf("current = %s, want g-3", reg.Current().ID)
	}
	for _, c := range []struct {
		id   string
		want *config.Generation
	}{{"g-3", g[2]}, {"g-2", g[1]}, {"g-1", nil}, {"g-9", nil}} {
		if got := reg.Get(c.id); got != c.want {
			t.Errorf("Get(%s) = %v, want %v", c.id, got, c.want)
		}
	}
}

func TestRegistry_KeepBound(t *testing.T) {
	t.Run("at least one", func(t *testing.T) {
		reg := reload.NewRegistry(0)
		g := gens(2)
		reg.Swap(g[0])
		reg.Swap(g[1])
		if reg.Get("g-1") != nil || reg.Get("g-2") != g[1] {
			t.Fatal("keep 0 must retain exactly the live generation")
		}
	})
	t.Run("a generation swapped in again counts once", func(t *testing.T) {
		reg := reload.NewRegistry(2)
		g := gens(2)
		reg.Swap(g[0])
		reg.Swap(g[1])
		reg.Swap(g[0])
		if reg.Current() != g[0] || reg.Get("g-2") != g[1] {
			t.Fatal("swapping the same id again evicted another generation")
		}
		reg.Swap(gens(3)[2])
		if reg.Get("g-2") != nil || reg.Get("g-1") != g[0] {
			t.Fatal("the oldest generation was not the one retired")
		}
	})
}

func TestRegistry_StatusAfterFailKeepsLastGoodAndGeneration(t *testing.T) {
	reg := reload.NewRegistry(2)
	g := gens(2)
	reg.Swap(g[0])
	ok := reg.Status()
	if ok.Result != "ok" || ok.Generation != "g-1" || ok.LastGood.IsZero() || !ok.At.Equal(ok.LastGood) {
		t.Fatalf("status after a swap = %+v", ok)
	}

	const rendered = "hooks/a.yaml:3:7: cel_syntax: boom\n"
	reg.Fail(rendered)
	st := reg.Status()
	if st.Result != "error" || st.Error != rendered || st.Generation != "g-1" || !st.LastGood.Equal(ok.LastGood) || st.At.Before(ok.At) {
		t.Fatalf("status after a failure = %+v", st)
	}
	if reg.Current() != g[0] {
		t.Fatal("a failure changed the live generation")
	}

	reg.Swap(g[1])
	if st := reg.Status(); st.Result != "ok" || st.Error != "" || st.Generation != "g-2" {
		t.Fatalf("status after recovery = %+v", st)
	}
}

func TestRegistry_FailBeforeAnySwap(t *testing.T) {
	reg := reload.NewRegistry(1)
	reg.Fail("x")
	if st := reg.Status(); st.Result != "error" || st.Generation != "" || !st.LastGood.IsZero() {
		t.Fatalf("status = %+v", st)
	}
	if reg.Current() != nil {
		t.Fatal("a failure made a generation live")
	}
}

// Readers never see a generation that was not swapped in, whatever the interleaving.
func TestRegistry_ConcurrentReadersAndSwaps(t *testing.T) {
	reg := reload.NewRegistry(3)
	g := gens(50)
	reg.Swap(g[0])
	valid := map[*config.Generation]bool{}
	for _, x := range g {
		valid[x] = true
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 500 {
				cur := reg.Current()
				if !valid[cur] {
					t.Errorf("Current returned an unknown generation %v", cur)
					return
				}
				if got := reg.Get(cur.ID); got != nil && got != cur {
					t.Errorf("Get(%s) returned another generation", cur.ID)
					return
				}
				_ = reg.Status()
			}
		})
	}
	for _, x := range g[1:] {
		reg.Swap(x)
	}
	wg.Wait()
	if reg.Current() != g[49] {
		t.Fatal("the last swap is not live")
	}
}

func TestRegistry_SwappedClosesAtTheNextSwap(t *testing.T) {
	reg := reload.NewRegistry(2)
	g := gens(2)
	first := reg.Swapped()
	reg.Fail("broken")
	select {
	case <-first:
		t.Fatal("a failed reload closed Swapped")
	default:
	}
	reg.Swap(g[0])
	<-first
	second := reg.Swapped()
	if second == first {
		t.Fatal("Swapped after a swap returned the closed channel")
	}
	select {
	case <-second:
		t.Fatal("the channel for the next swap is already closed")
	default:
	}
	reg.Swap(g[1])
	<-second
	if reg.Current() != g[1] {
		t.Fatal("Current is not the generation whose swap closed the channel")
	}
}

func TestRegistry_LookupRunsTheMissHandlerGetDoesNot(t *testing.T) {
	reg := reload.NewRegistry(2)
	g := gens(2)
	reg.Swap(g[0])
	var asked []string
	reg.OnMiss(func(id string) { asked = append(asked, id); reg.Swap(g[1]) })
	if reg.Get("g-2") != nil || len(asked) != 0 {
		t.Fatalf("Get ran the miss handler: %v", asked)
	}
	if got := reg.Lookup("g-2"); got == nil || got.ID != "g-2" || len(asked) != 1 {
		t.Fatalf("Lookup(g-2) = %v after asking %v, want the generation the handler made live", got, asked)
	}
	if reg.Lookup("g-1") == nil || len(asked) != 1 {
		t.Fatalf("a retained generation ran the handler: %v", asked)
	}
}
