package decisionlog

import (
	"io"
	"log/slog"
	"path/filepath"
	"testing"
)

// BenchmarkProcess_StageToFile is the worker's cost of one after_planning event written
// to a file with its payload: build, mask (one rule), encode, write.
func BenchmarkProcess_StageToFile(b *testing.B) {
	sink, err := NewFileSink(FileOptions{Path: filepath.Join(b.TempDir(), "d.log")})
	if err != nil {
		b.Fatal(err)
	}
	benchmarkProcess(b, sink)
}

// BenchmarkProcess_StageToLog is the worker's cost of one after_planning event at the
// daemon's default flags: one JSON log line, no payload, flushed every 64 events as a
// busy worker flushes its batches.
func BenchmarkProcess_StageToLog(b *testing.B) {
	benchmarkProcess(b, NewLogSink(io.Discard, slog.LevelInfo, false))
}

func benchmarkProcess(b *testing.B, sink Sink) {
	gen, rules := loadRules(b, "decision_log:\n  mask: [metadata.email]\n")
	l, err := New(Options{Rules: rules, Sinks: []Sink{sink}})
	if err != nil {
		b.Fatal(err)
	}
	defer closeLogger(b, l)
	r := stageReport("r1", gen)
	rules1, known := rules(gen)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		l.process(pending{stage: r, rules: rules1, known: known})
		if n++; n%64 == 0 {
			l.flush()
		}
	}
}
