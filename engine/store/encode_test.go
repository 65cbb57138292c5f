package store

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/internal/wiretest"
)

// What the durable and Redis stores keep is encoding/json's encoding, byte for byte:
// of a record, a state and its runs, and a summary, with every field set and with
// none; a field added to any of them that the encoders do not write fails here.
func TestEncode_AgreesWithEncodingJSON(t *testing.T) {
	rec, st := wiretest.Filled(&engine.ExecutionRecord{}), wiretest.Filled(&engine.RequestState{})
	same := func(what string, v any, got []byte, err error) {
		t.Helper()
		want, werr := json.Marshal(v)
		if err != nil || werr != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s:\n %s (%v)\nencoding/json:\n %s (%v)", what, got, err, want, werr)
		}
	}
	for _, r := range []*engine.ExecutionRecord{rec, {}} {
		got, err := EncodeRecord(r)
		same("record", r, got, err)
		got, err = EncodeSummary(Summarize(r))
		same("summary", Summarize(r), got, err)
	}
	for _, sum := range []*Summary{wiretest.Filled(&Summary{}), {}} {
		got, err := EncodeSummary(sum)
		same("summary", sum, got, err)
	}
	for _, s := range []*engine.RequestState{st, {}} {
		rest, runs, err := EncodeState(s)
		without := *s
		without.Runs = nil
		same("state", &without, rest, err)
		if len(s.Runs) > 0 {
			same("runs", s.Runs, runs, err)
		}
	}
}
