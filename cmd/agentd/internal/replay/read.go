package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/agentd-dev/agentd/decisionlog"
	"github.com/agentd-dev/agentd/engine"
)

// Read reads execution records or decision events from r, in any of the forms agentd
// writes them: one JSON value or a stream of them (JSON lines), each a record, an
// event, a list of either, or a page of GET /v1/executions holding whole records. A
// page's record summaries cannot be replayed from a file (Fetch follows them).
func Read(r io.Reader) (*Set, error) {
	items, err := decodeItems(r)
	if err != nil {
		return nil, err
	}
	return classify(items, nil)
}

// decodeItems flattens the JSON values of r into their items.
func decodeItems(r io.Reader) ([]json.RawMessage, error) {
	dec := json.NewDecoder(r)
	var items []json.RawMessage
	for n := 1; ; n++ {
		var v json.RawMessage
		if err := dec.Decode(&v); errors.Is(err, io.EOF) {
			return items, nil
		} else if err != nil {
			return nil, fmt.Errorf("JSON value %d: %w", n, err)
		}
		more, err := flatten(v)
		if err != nil {
			return nil, fmt.Errorf("JSON value %d: %w", n, err)
		}
		items = append(items, more...)
	}
}

// flatten returns the items of one JSON value: a list's elements, a page's records,
// or the value itself.
func flatten(v json.RawMessage) ([]json.RawMessage, error) {
	switch t := bytes.TrimSpace(v); {
	case len(t) > 0 && t[0] == '[':
		var list []json.RawMessage
		return list, json.Unmarshal(t, &list)
	case len(t) > 0 && t[0] == '{':
		var page struct {
			Records *[]json.RawMessage `json:"records"`
		}
		if err := json.Unmarshal(t, &page); err != nil {
			return nil, err
		}
		if page.Records != nil {
			return *page.Records, nil
		}
		return []json.RawMessage{t}, nil
	}
	return nil, fmt.Errorf("neither a record, an event nor a list of them")
}

// shape is what tells the items apart.
type shape struct {
	Kind          string          `json:"kind"`
	DecisionID    string          `json:"decision_id"`
	RequestID     string          `json:"request_id"`
	PipelineHooks json.RawMessage `json:"pipeline_hooks"`
}

// classify turns items into decisions. A record summary is handed to fetch (nil: it
// is skipped).
func classify(items []json.RawMessage, fetch func(id string) (*engine.ExecutionRecord, error)) (*Set, error) {
	set := &Set{}
	var events []*decisionlog.Event
	for i, raw := range items {
		var s shape
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("item %d: %w", i+1, err)
		}
		switch {
		case s.Kind != "" && s.DecisionID != "":
			var e decisionlog.Event
			if err := json.Unmarshal(raw, &e); err != nil {
				return nil, fmt.Errorf("item %d: decision event: %w", i+1, err)
			}
			events = append(events, &e)
		case s.RequestID != "" && s.PipelineHooks != nil:
			var rec engine.ExecutionRecord
			if err := json.Unmarshal(raw, &rec); err != nil {
				return nil, fmt.Errorf("item %d: record %s: %w", i+1, s.RequestID, err)
			}
			set.Add(fromRecord(&rec))
		case s.RequestID != "" && fetch != nil:
			rec, err := fetch(s.RequestID)
			if err != nil {
				return nil, err
			}
			set.Add(fromRecord(rec))
		case s.RequestID != "":
			set.Skips = append(set.Skips, Skip{RequestID: s.RequestID, Reason: "a record summary, not the record: give the daemon's URL, or export whole records"})
		default:
			return nil, fmt.Errorf("item %d: neither an execution record nor a decision event", i+1)
		}
	}
	set.Add(fromEvents(events))
	return set, nil
}
