package decisionlog

import (
	"path/filepath"
	"testing"
)

// BenchmarkProcess_StageToFile is the worker's cost of one after_planning event written
// to a file with its payload: build, mask (one rule), encode, write.
func BenchmarkProcess_StageToFile(b *testing.B) {
	gen, rules := loadRules(b, "decision_log:\n  mask: [metadata.email]\n")
	sink, err := NewFileSink(FileOptions{Path: filepath.Join(b.TempDir(), "d.log")})
	if err != nil {
		b.Fatal(err)
	}
	l, err := New(Options{Rules: rules, Sinks: []Sink{sink}})
	if err != nil {
		b.Fatal(err)
	}
	defer closeLogger(b, l)
	r := stageReport("r1", gen)
	rules1, known := rules(gen)
	b.ReportAllocs()
	for b.Loop() {
		l.process(pending{stage: r, rules: rules1, known: known})
	}
}
