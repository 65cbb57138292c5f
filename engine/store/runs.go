package store

import (
	"encoding/json"
	"fmt"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/jsonread"
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

// DecodeState decodes a state the durable and Redis stores keep, the JSON of the state
// (rest; a state written whole, before its runs were kept apart, is one too) and the
// JSON of its runs (empty for none, as EncodeState writes). Its state and error are
// those of json.Unmarshal(rest, &st) followed, when that succeeds and runs is not
// empty, by json.Unmarshal(runs, &st.Runs), on a zero st, with the state nil on an
// error: texts in jsonread's subset are read without reflection (engine.ReadState),
// the others decoded again by encoding/json.
func DecodeState(rest, runs []byte) (*engine.RequestState, error) {
	st := new(engine.RequestState)
	r := jsonread.New(rest)
	ok := engine.ReadState(r, st) && r.End()
	if ok && len(runs) > 0 {
		r = jsonread.New(runs)
		ok = engine.ReadRuns(r, &st.Runs) && r.End()
	}
	if ok {
		return st, nil
	}
	st = new(engine.RequestState)
	if err := json.Unmarshal(rest, st); err != nil {
		return nil, err
	}
	if len(runs) > 0 {
		if err := json.Unmarshal(runs, &st.Runs); err != nil {
			return nil, err
		}
	}
	return st, nil
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
