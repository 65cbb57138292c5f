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
	if rest, err = AppendState(make([]byte, 0, 1024), st); err != nil {
		return nil, nil, err
	}
	if runs, err = EncodeRuns(st.Runs); err != nil {
		return nil, nil, err
	}
	return rest, runs, nil
}

// AppendState appends to dst the JSON of st without its step runs (EncodeState's rest).
func AppendState(dst []byte, st *engine.RequestState) ([]byte, error) {
	without := *st
	without.Runs = nil
	b, err := engine.AppendJSON(dst, &without)
	if err != nil {
		return nil, fmt.Errorf("encode request state: %w", err)
	}
	return b, nil
}

// EncodeRuns is the JSON of a state's step runs, nil for none.
func EncodeRuns(runs map[string]*engine.StepRun) ([]byte, error) {
	return AppendRuns(nil, runs)
}

// AppendRuns appends to dst the JSON of a state's step runs, nothing for none.
func AppendRuns(dst []byte, runs map[string]*engine.StepRun) ([]byte, error) {
	if len(runs) == 0 {
		return dst, nil
	}
	b, err := engine.AppendJSON(dst, runs)
	if err != nil {
		return nil, fmt.Errorf("encode step runs: %w", err)
	}
	return b, nil
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
	return AppendRecord(make([]byte, 0, 2048), rec)
}

// AppendRecord appends to dst the JSON of rec, as encoding/json writes it.
func AppendRecord(dst []byte, rec *engine.ExecutionRecord) ([]byte, error) {
	b, err := engine.AppendJSON(dst, rec)
	if err != nil {
		return nil, fmt.Errorf("encode execution record: %w", err)
	}
	return b, nil
}

var summaryViews = engine.ViewerOf[Summary]()

// EncodeSummary is the JSON of sum, as encoding/json writes it.
func EncodeSummary(sum *Summary) ([]byte, error) {
	return AppendSummary(make([]byte, 0, 512), sum)
}

// AppendSummary appends to dst the JSON of sum, as encoding/json writes it.
func AppendSummary(dst []byte, sum *Summary) ([]byte, error) {
	b, err := engine.AppendJSON(dst, summaryViews.View(sum))
	if err != nil {
		return nil, fmt.Errorf("encode execution record summary: %w", err)
	}
	return b, nil
}
