// Package inproc measures agentd's compiled hooks against the plain libraries in the
// benchmark process: the required Rego hook against OPA's PreparedEvalQuery.Eval, and a
// before_planning stage of CEL hooks against the same CEL programs run raw. Both sides
// of a pair run with testing.Benchmark, interleaved round by round, so machine noise
// falls on both.
package inproc

import (
	"fmt"
	"slices"
	"testing"
)

// Side is one contender of a pair. Op runs one operation and reports a wrong result
// as an error; it is called sequentially, never concurrently.
type Side struct {
	Name string
	Op   func() error
}

// Result is one side's figures: medians over the rounds.
type Result struct {
	NsPerOp     float64
	AllocsPerOp int64
	BytesPerOp  int64
	// Rounds holds the ns/op of each round, in order.
	Rounds []float64
}

// Compare runs every side for rounds rounds, rotating which goes first, each run being
// one testing.Benchmark (its length set by -test.benchtime). It checks each side once
// before measuring and fails on the first error. Results are in the order of sides.
func Compare(rounds int, sides ...Side) ([]Result, error) {
	for _, s := range sides {
		if err := s.Op(); err != nil {
			return nil, fmt.Errorf("%s: %w", s.Name, err)
		}
	}
	runs := make([][]testing.BenchmarkResult, len(sides))
	for r := range max(rounds, 1) {
		for k := range sides {
			i := (k + r) % len(sides)
			res, err := Run(sides[i])
			if err != nil {
				return nil, err
			}
			runs[i] = append(runs[i], res)
		}
	}
	out := make([]Result, len(sides))
	for i := range sides {
		out[i] = summarize(runs[i])
	}
	return out, nil
}

// Run benchmarks one side once.
func Run(s Side) (testing.BenchmarkResult, error) {
	var opErr error
	res := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := s.Op(); err != nil {
				opErr = err
				return
			}
		}
	})
	if opErr != nil {
		return res, fmt.Errorf("%s: %w", s.Name, opErr)
	}
	if res.N == 0 {
		return res, fmt.Errorf("%s: the benchmark did not run", s.Name)
	}
	return res, nil
}

// PairedRatio is the median over rounds of a's time per operation over b's in the same
// round, for results of one Compare: the sides of a round run back to back, so the
// ratio of a round cancels most of what the shared machine did to both, which the
// ratio of the two medians does not.
func PairedRatio(a, b Result) float64 {
	n := min(len(a.Rounds), len(b.Rounds))
	ratios := make([]float64, n)
	for i := range n {
		ratios[i] = a.Rounds[i] / b.Rounds[i]
	}
	return median(ratios)
}

func summarize(runs []testing.BenchmarkResult) Result {
	var r Result
	ns := make([]float64, len(runs))
	allocs := make([]int64, len(runs))
	bytes := make([]int64, len(runs))
	for i, run := range runs {
		ns[i] = float64(run.T.Nanoseconds()) / float64(run.N)
		allocs[i] = run.AllocsPerOp()
		bytes[i] = run.AllocedBytesPerOp()
	}
	r.Rounds = slices.Clone(ns)
	r.NsPerOp = median(ns)
	r.AllocsPerOp = median(allocs)
	r.BytesPerOp = median(bytes)
	return r
}

func median[T int64 | float64](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
