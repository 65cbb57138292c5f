package store

import (
	"encoding/json"
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
	if rest, err = json.Marshal(&without); err != nil {
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
	data, err := json.Marshal(runs)
	if err != nil {
		return nil, fmt.Errorf("encode step runs: %w", err)
	}
	return data, nil
}
