package engine_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
	"github.com/agentd-dev/agentd/engine/store"
)

// rewritingRecords is a record store without engine.OperationStore: the driver reads
// and rewrites the record for every check.
type rewritingRecords struct{ engine.RecordStore }

// countingAppends is the memory store's engine.OperationStore, counting its appends.
type countingAppends struct {
	*store.Memory
	appends atomic.Int32
}

func (c *countingAppends) AppendOperation(ctx context.Context, id string, o engine.OperationRecord, at time.Time, maxEntries int) error {
	c.appends.Add(1)
	return c.Memory.AppendOperation(ctx, id, o, at, maxEntries)
}

// A check's operation record appended by the store (engine.OperationStore) leaves the
// record as a rewrite of the whole record does: same revisions, same operations with
// their outcomes, labels and finishes, in order.
func TestCheck_AppendedRecordIsTheRewrittenOne(t *testing.T) {
	phases := [][]engine.RoutingStep{
		{secret("step-1"), mail("step-2", "x@evil.example", "{{step-1.response.value}}", "step-1"), mail("step-3", "ops@acme.example", "hi")},
		{mail("step-4", "x@evil.example", "hello"), mail("step-5", "ops@acme.example", "hello")},
	}
	records := func(mem *store.Memory, records engine.RecordStore) *engine.ExecutionRecord {
		seen := &flowSeen{flows: map[string]op.Call{}}
		d, err := engine.NewDriver(engine.DriverConfig{Generations: engine.Fixed{Gen: flowGeneration(t, seen)}, States: mem, Records: records})
		if err != nil {
			t.Fatal(err)
		}
		(flowRun{"req", phases}).run(t, d)
		rec, err := mem.Get(context.Background(), "req")
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	appending := &countingAppends{Memory: store.NewMemory(store.MemoryOptions{})}
	got := records(appending.Memory, appending)
	plain := store.NewMemory(store.MemoryOptions{})
	want := records(plain, rewritingRecords{plain})
	if n := appending.appends.Load(); n != 5 {
		t.Errorf("%d checks were appended, want all 5", n)
	}
	shape := func(rec *engine.ExecutionRecord) string {
		out := fmt.Sprintf("revision %d, %d hooks, %d phases, %s;", rec.Revision, len(rec.PipelineHooks), len(rec.Phases), rec.Status)
		for _, o := range rec.Operations {
			out += fmt.Sprintf(" %s %s %s %v %v", o.StepID, o.Outcome, o.Code, o.Labels, o.CallLabels)
			if o.Finish != nil {
				out += fmt.Sprintf(" finish %s %v", o.Finish.Status, o.Finish.Labels)
			}
			out += ";"
		}
		return out
	}
	if g, w := shape(got), shape(want); g != w {
		t.Fatalf("record with appends:\n %s\nwith rewrites:\n %s", g, w)
	}
	if len(got.Operations) != 5 || got.Operations[2].StepID != "step-2" || got.Operations[2].Outcome != engine.CheckDeny || got.Operations[0].Finish == nil {
		t.Fatalf("record = %s, want five checks, step-2's (the third) denied, the first finished", shape(got))
	}
}
