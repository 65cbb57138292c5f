package expr

import (
	"context"
	"testing"
	"time"
)

func TestScratchSlow(t *testing.T) {
	for _, n := range []int{1000, 2000, 4000} {
		items := make([]any, n)
		for i := range items {
			items[i] = i
		}
		vars := &Vars{Metadata: map[string]any{"items": items}}
		p := mustCompile(t, newCompiler(t, 1<<40), BeforePlanning, "metadata.items.all(x, x >= 0)", Bool)
		start := time.Now()
		p.EvalBool(context.Background(), vars)
		t.Logf("n=%d %v", n, time.Since(start))
	}
}
