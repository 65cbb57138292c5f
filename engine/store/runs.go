package store

import (
	"fmt"

	"github.com/agentd-dev/agentd/engine"
)

// EncodeState is the encoding of st that the durable and Redis stores keep: the JSON
// of st without its step runs (rest: every other field, whatever fields the state
// gains) and the JSON of its runs apart (nil for none), so that a step's claim
// (engine.RunStore) rewrites the runs alone.
func EncodeState(st *engine.RequestState) (rest, runs []byte, err error) {
	without := *st
	without.Runs = nil
	if rest, err = engine.AppendJSON(make([]byte, 0, 1024), &without); err != nil {
		return nil, nil, fmt.Errorf("encode request state: %w", err)
	}
	if runs, err = EncodeRuns(st.Runs); err != nil {
		return nil, nil, err
	}
	return rest, runs, nil
}

// EncodeRuns is the JSON of a state's step runs, nil for none.
func EncodeRuns(runs map[string]*engine.StepRun) ([]byte, error) {
	if len(runs) == 0 {
		return nil, nil
	}
	data, err := engine.AppendJSON(nil, runs)
	if err != nil {
		return nil, fmt.Errorf("encode step runs: %w", err)
	}
	return data, nil
}

// EncodeRecord is the JSON of rec, as encoding/json writes it.
func EncodeRecord(rec *engine.ExecutionRecord) ([]byte, error) {
	data, err := engine.AppendJSON(make([]byte, 0, 2048), rec)
	if err != nil {
		return nil, fmt.Errorf("encode execution record: %w", err)
	}
	return data, nil
}

var summaryViews = engine.ViewerOf[Summary]()

// EncodeSummary is the JSON of sum, as encoding/json writes it.
func EncodeSummary(sum *Summary) ([]byte, error) {
	data, err := engine.AppendJSON(make([]byte, 0, 512), summaryViews.View(sum))
	if err != nil {
		return nil, fmt.Errorf("encode execution record summary: %w", err)
	}
	return data, nil
}
