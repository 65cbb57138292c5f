package redis

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/agentd-dev/agentd/engine/store"
)

// indexKey names the record index: a sorted set whose members all score 0, so that it
// orders them by their bytes. A record's member is its entry (entryOf).
const indexKey = "recidx"

// Index entries start with entryDigits decimal digits of maxEntryMillis minus the
// record's UpdatedAt in Unix milliseconds, followed by the request id: byte order is
// the list order (newest first, then by request id), and a cursor is an entry to
// continue after. putRecordScript relies on the width (the id starts at byte 14).
const (
	entryDigits    = 13
	maxEntryMillis = 9_999_999_999_999 // 2286-11-20
)

// maxScan bounds the index entries one List call examines; a call that reaches it
// returns the records it found and a cursor to go on from.
const maxScan = 10_000

// indexSlack is added to the longest retention before index entries are trimmed by
// age, for replicas whose clocks disagree a little.
const indexSlack = time.Minute

func millisPrefix(ms int64) string {
	return fmt.Sprintf("%0*d", entryDigits, maxEntryMillis-min(max(ms, 0), maxEntryMillis))
}

// entryOf returns the index entry of position p.
func entryOf(p store.Position) string { return millisPrefix(p.Millis) + p.ID }

// positionOf returns the position of index entry e.
func positionOf(e string) (store.Position, bool) {
	if len(e) <= entryDigits {
		return store.Position{}, false
	}
	inv, err := strconv.ParseInt(e[:entryDigits], 10, 64)
	if err != nil {
		return store.Position{}, false
	}
	return store.Position{Millis: maxEntryMillis - inv, ID: e[entryDigits:]}, true
}

// trimBound is the index entry from which on every entry is older than any record the
// retention keeps at now, or "" when a retention keeps records until deleted.
func (r *Records) trimBound(now time.Time) string {
	if r.retention.Success <= 0 || r.retention.Error <= 0 {
		return ""
	}
	oldest := now.Add(-max(r.retention.Success, r.retention.Error) - indexSlack)
	return millisPrefix(oldest.UnixMilli())
}

// List implements store.RecordLister. It walks the index from the cursor, reads the
// summaries of a batch of entries at a time and matches them; an entry whose record
// is gone (expired before its entry was trimmed) is skipped and dropped from the index.
// A call examines at most maxScan entries.
func (r *Records) List(ctx context.Context, q store.Query) (store.Page, error) {
	if err := ctx.Err(); err != nil {
		return store.Page{}, err
	}
	if err := q.Validate(); err != nil {
		return store.Page{}, err
	}
	after, _ := q.CursorPosition()
	from, to := "-", "+"
	if !after.IsZero() {
		from = "(" + entryOf(after)
	}
	if !q.Until.IsZero() && after.Before(store.Position{Millis: q.Until.UnixMilli()}) {
		from = "[" + millisPrefix(q.Until.UnixMilli())
	}
	if ms := q.Since.UnixMilli(); !q.Since.IsZero() && ms > 0 {
		to = "(" + millisPrefix(ms-1)
	}
	limit := q.PageSize()
	batch := int64(min(max(2*limit, 64), 1000))
	index := r.s.key(indexKey, "")
	page := store.Page{Records: []store.Summary{}}
	var gone []any
	defer func() {
		if len(gone) > 0 {
			_ = r.s.do(context.WithoutCancel(ctx), r.s.timeout, "trim record index", "", func(ctx context.Context) error {
				return r.s.client.ZRem(ctx, index, gone...).Err()
			})
		}
	}()
	now := time.Now()
	for scanned := 0; ; {
		var entries []string
		err := r.s.do(ctx, r.s.timeout, "list records", "", func(ctx context.Context) error {
			var err error
			entries, err = r.s.client.ZRangeArgs(ctx, goredis.ZRangeArgs{Key: index, Start: from, Stop: to, ByLex: true, Count: batch}).Result()
			return err
		})
		if err != nil {
			return store.Page{}, err
		}
		summaries, err := r.summaries(ctx, entries)
		if err != nil {
			return store.Page{}, err
		}
		more := int64(len(entries)) == batch
		for i, e := range entries {
			s := summaries[i]
			if s == nil {
				gone = append(gone, e)
				continue
			}
			if !q.Match(s, now) {
				continue
			}
			page.Records = append(page.Records, *s)
			if len(page.Records) == limit {
				if more || i < len(entries)-1 {
					page.NextCursor = store.PositionOf(s).Cursor()
				}
				return page, nil
			}
		}
		if !more {
			return page, nil
		}
		last := entries[len(entries)-1]
		if scanned += len(entries); scanned >= maxScan {
			p, _ := positionOf(last)
			page.NextCursor = p.Cursor()
			return page, nil
		}
		from = "(" + last
	}
}

// summaries reads the summary of the record of each index entry, nil for an entry
// whose record is gone or has moved to another entry.
func (r *Records) summaries(ctx context.Context, entries []string) ([]*store.Summary, error) {
	cmds := make([]*goredis.SliceCmd, len(entries))
	err := r.s.do(ctx, r.s.timeout, "read record summaries", "", func(ctx context.Context) error {
		pipe := r.s.client.Pipeline()
		for i, e := range entries {
			p, ok := positionOf(e)
			if !ok {
				p.ID = ""
			}
			cmds[i] = pipe.HMGet(ctx, r.s.key("rec:", p.ID), "entry", "summary")
		}
		_, err := pipe.Exec(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]*store.Summary, len(entries))
	for i, cmd := range cmds {
		vals := cmd.Val()
		entry, _ := vals[0].(string)
		data, _ := vals[1].(string)
		if entry != entries[i] || data == "" {
			continue
		}
		var s store.Summary
		if err := json.Unmarshal([]byte(data), &s); err != nil {
			return nil, fmt.Errorf("decode summary of record %q: %w", entries[i][entryDigits:], err)
		}
		out[i] = &s
	}
	return out, nil
}
