package store

import (
	"context"
	"slices"
)

// List implements RecordLister. It examines every live record, so a page holds Limit
// records whenever that many more match, and NextCursor is set only when more do.
func (m *Memory) List(ctx context.Context, q Query) (Page, error) {
	if err := ctx.Err(); err != nil {
		return Page{}, err
	}
	if err := q.Validate(); err != nil {
		return Page{}, err
	}
	after, _ := q.CursorPosition()
	m.mu.Lock()
	now := m.now()
	all := make([]*Summary, 0, m.records.Len())
	m.records.Range(now, func(_ string, e memoryRecord) bool {
		all = append(all, e.summary)
		return true
	})
	m.mu.Unlock()
	hits := all[:0]
	for _, s := range all {
		if after.Before(PositionOf(s)) && q.Match(s, now) {
			hits = append(hits, s)
		}
	}
	slices.SortFunc(hits, func(a, b *Summary) int {
		pa, pb := PositionOf(a), PositionOf(b)
		switch {
		case pa.Before(pb):
			return -1
		case pb.Before(pa):
			return 1
		}
		return 0
	})
	page := Page{Records: make([]Summary, 0, min(len(hits), q.limit()))}
	for _, s := range hits[:min(len(hits), q.limit())] {
		page.Records = append(page.Records, s.clone())
	}
	if len(hits) > q.limit() {
		page.NextCursor = PositionOf(hits[q.limit()-1]).Cursor()
	}
	return page, nil
}
