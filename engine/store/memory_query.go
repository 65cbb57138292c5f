package store

import (
	"context"
	"slices"
	"time"
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
	now := m.now()
	m.recordsMu.Lock()
	all := make([]*Summary, 0, m.records.Len()+m.failed.Len())
	collect := func(id string, e memoryRecord) bool {
		// An id may have an entry in both maps: only the one record finds counts.
		if r, _ := m.record(id, now); e.summary != nil && r.summary == e.summary {
			all = append(all, e.summary)
		}
		return true
	}
	m.records.Range(now, collect)
	m.failed.Range(now, collect)
	m.recordsMu.Unlock()
	return PageOf(&q, now, all), nil
}

// PageOf returns the page q selects of the records summarized by all, in list order
// from q's cursor, taking their lifecycle as of now: a store that examines every live
// record passes them all. q must be valid (Query.Validate). The page holds copies of
// the summaries, which PageOf leaves unchanged.
func PageOf(q *Query, now time.Time, all []*Summary) Page {
	after, _ := q.CursorPosition()
	k := q.PageSize()
	top := make([]listed, 0, k+1) // the first k+1 matches in list order
	for _, s := range all {
		p := PositionOf(s)
		if !after.Before(p) || len(top) == k+1 && !p.Before(top[k].pos) || !q.Match(s, now) {
			continue
		}
		i, _ := slices.BinarySearchFunc(top, p, func(l listed, p Position) int {
			if l.pos.Before(p) {
				return -1
			}
			return 1
		})
		top = slices.Insert(top, i, listed{p, s})[:min(len(top)+1, k+1)]
	}
	page := Page{Records: make([]Summary, 0, min(len(top), k))}
	for _, l := range top[:min(len(top), k)] {
		page.Records = append(page.Records, l.s.clone())
	}
	if len(top) > k {
		page.NextCursor = top[k-1].pos.Cursor()
	}
	return page
}

// listed is a record matching a list query, at its position.
type listed struct {
	pos Position
	s   *Summary
}
