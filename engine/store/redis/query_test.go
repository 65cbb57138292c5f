package redis_test

import (
	"context"
	"fmt"
	neturl "net/url"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/store"
	"github.com/agentd-dev/agentd/engine/store/redis"
	"github.com/agentd-dev/agentd/engine/store/redis/redistest"
)

// index opens a store on the test Redis and returns it with a raw client and the key
// of its record index.
func index(t testing.TB) (*redis.Store, *goredis.Client, string) {
	t.Helper()
	url := redistest.URL(t)
	s, err := redis.Open(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	u.RawQuery = ""
	opts, err := goredis.ParseURL(u.String())
	if err != nil {
		t.Fatal(err)
	}
	c := goredis.NewClient(opts)
	t.Cleanup(func() { c.Close() })
	return s, c, s.Prefix() + "recidx"
}

func ids(t *testing.T, r store.RecordLister, q store.Query) ([]string, string) {
	t.Helper()
	page, err := r.List(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range page.Records {
		out = append(out, s.RequestID)
	}
	return out, page.NextCursor
}

// A record that expires before its index entry is not listed, and the list drops the
// entry.
func TestRecords_ListSkipsExpiredRecords(t *testing.T) {
	s, c, idx := index(t)
	r := s.Records(store.Retention{Success: 50 * time.Millisecond, Error: time.Hour})
	ctx := context.Background()
	now := time.Now()
	for _, rec := range []*engine.ExecutionRecord{
		{RequestID: "ok", Status: engine.RecordSucceeded, Revision: 1, UpdatedAt: now},
		{RequestID: "bad", Status: engine.RecordFailed, Revision: 1, UpdatedAt: now.Add(-time.Second)},
	} {
		if err := r.Put(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(150 * time.Millisecond)
	if got, _ := ids(t, r, store.Query{}); len(got) != 1 || got[0] != "bad" {
		t.Fatalf("list after ok expired = %v, want [bad]", got)
	}
	if n := c.ZCard(ctx, idx).Val(); n != 1 {
		t.Fatalf("the index holds %d entries after the list met an expired record, want 1", n)
	}
}

// Writes drop index entries older than every retention, and entries of expired records
// they sample, so the index stays near the live records.
func TestRecords_IndexStaysBounded(t *testing.T) {
	s, c, idx := index(t)
	ctx := context.Background()
	short := s.Records(store.Retention{Success: time.Millisecond, Error: time.Hour})
	now := time.Now()
	for i := range 50 {
		if err := short.Put(ctx, &engine.ExecutionRecord{RequestID: fmt.Sprint("done-", i), Status: engine.RecordSucceeded, Revision: 1, UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(20 * time.Millisecond)
	for i := range 100 {
		if err := short.Put(ctx, &engine.ExecutionRecord{RequestID: fmt.Sprint("open-", i), Status: engine.RecordRunning, Revision: 1, UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.ZCard(ctx, idx).Val(); n > 125 {
		t.Fatalf("the index holds %d entries for 100 live records and 50 expired ones", n)
	}
	old := now.Add(-2 * time.Hour)
	if err := short.Put(ctx, &engine.ExecutionRecord{RequestID: "ancient", Status: engine.RecordRunning, Revision: 1, UpdatedAt: old}); err != nil {
		t.Fatal(err)
	}
	if got, _ := ids(t, short, store.Query{IDContains: "ancient"}); len(got) != 0 {
		t.Fatalf("an entry older than every retention is still listed: %v", got)
	}
	keep := s.Records(store.Retention{Success: time.Hour})
	if err := keep.Put(ctx, &engine.ExecutionRecord{RequestID: "kept", Status: engine.RecordFailed, Revision: 1, UpdatedAt: old}); err != nil {
		t.Fatal(err)
	}
	if got, _ := ids(t, keep, store.Query{IDContains: "kept"}); len(got) != 1 {
		t.Fatalf("a record kept until deleted is not listed: %v", got)
	}
}

// A list that examines its bound of index entries without filling its page returns
// what it found and a cursor to go on from.
func TestRecords_ListExaminesBoundedEntries(t *testing.T) {
	s, c, idx := index(t)
	r := s.Records(store.Retention{})
	ctx := context.Background()
	now := time.Now()
	if err := r.Put(ctx, &engine.ExecutionRecord{RequestID: "last", Status: engine.RecordFailed, Revision: 1, UpdatedAt: now.Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	// 12,000 entries newer than it whose records are gone.
	members := make([]goredis.Z, 12_000)
	for i := range members {
		members[i] = goredis.Z{Member: fmt.Sprintf("%013d", 9_999_999_999_999-now.UnixMilli()) + fmt.Sprintf("gone-%05d", i)}
	}
	if err := c.ZAdd(ctx, idx, members...).Err(); err != nil {
		t.Fatal(err)
	}
	got, cursor := ids(t, r, store.Query{Status: engine.RecordFailed})
	if len(got) != 0 || cursor == "" {
		t.Fatalf("first call = %v, cursor %q; want no record and a cursor", got, cursor)
	}
	got, cursor = ids(t, r, store.Query{Status: engine.RecordFailed, Cursor: cursor})
	if len(got) != 1 || got[0] != "last" || cursor != "" {
		t.Fatalf("second call = %v, cursor %q; want [last] and no cursor", got, cursor)
	}
	if n := c.ZCard(ctx, idx).Val(); n != 1 {
		t.Fatalf("the index holds %d entries after the list passed the dangling ones, want 1", n)
	}
}
