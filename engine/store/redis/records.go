package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/store"
)

// putRecordScript is the revision-gated write of an execution record and its entry in
// the record index, one atomic step in Redis: it writes only when no record is stored
// or the stored revision is lower, and returns {1} when written, {0, stored revision}
// when stale. Revisions travel as canonical decimal strings and compare exactly (Lua
// numbers are doubles). The index entry moves to the record's new position; entries
// older than any retention are trimmed, and two sampled entries whose record is gone
// are dropped, so the index stays about as large as the set of live records.
//
//	KEYS[1] the record's hash (fields revision, record, summary, entry)   KEYS[2] the index
//	ARGV[1] revision   ARGV[2] the record as JSON   ARGV[3] retention in ms, 0 keeps it
//	ARGV[4] the summary as JSON   ARGV[5] the index entry
//	ARGV[6] the trim bound: entries from it on are older than any retention ('' trims none)
//	ARGV[7] the key prefix of record hashes
var putRecordScript = goredis.NewScript(`
local function less(a, b)
  local na, nb = a:sub(1, 1) == '-', b:sub(1, 1) == '-'
  if na ~= nb then return na end
  if na then a, b = b:sub(2), a:sub(2) end
  if #a ~= #b then return #a < #b end
  return a < b
end
local stored = redis.call('HGET', KEYS[1], 'revision')
if stored and not less(stored, ARGV[1]) then
  return {0, stored}
end
local old = redis.call('HGET', KEYS[1], 'entry')
if old and old ~= ARGV[5] then
  redis.call('ZREM', KEYS[2], old)
end
redis.call('HSET', KEYS[1], 'revision', ARGV[1], 'record', ARGV[2], 'summary', ARGV[4], 'entry', ARGV[5])
if ARGV[3] == '0' then
  redis.call('PERSIST', KEYS[1])
else
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
redis.call('ZADD', KEYS[2], 0, ARGV[5])
if ARGV[6] ~= '' then
  redis.call('ZREMRANGEBYLEX', KEYS[2], '[' .. ARGV[6], '+')
end
for _, e in ipairs(redis.call('ZRANDMEMBER', KEYS[2], 2)) do
  if redis.call('HGET', ARGV[7] .. e:sub(14), 'entry') ~= e then
    redis.call('ZREM', KEYS[2], e)
  end
end
return {1}
`)

// Records is a Redis-backed engine.RecordStore and store.RecordLister sharing its
// Store's connection pool, key prefix and timeout. A record lives in the hash
// <prefix>rec:<request id> with the fields revision, record (JSON), summary (JSON, see
// store.Summary) and entry (its entry in the index), and expires after the retention
// of its outcome (store.Retention; zero keeps it until deleted). The index
// <prefix>recidx orders the records for List (see entryOf); its upkeep needs Redis
// 6.2 or later (ZRANDMEMBER).
type Records struct {
	s         *Store
	retention store.Retention
}

// Records returns the execution record store on s's Redis.
func (s *Store) Records(retention store.Retention) *Records {
	return &Records{s: s, retention: retention}
}

// Put implements engine.RecordStore.
func (r *Records) Put(ctx context.Context, rec *engine.ExecutionRecord) error {
	data, err := store.EncodeRecord(rec)
	if err != nil {
		return err
	}
	if len(data) > store.DefaultMaxRecordBytes {
		return fmt.Errorf("%w: request %q record is %d bytes, over the limit of %d", engine.ErrTooLarge, rec.RequestID, len(data), store.DefaultMaxRecordBytes)
	}
	sum := store.Summarize(rec)
	summary, err := store.EncodeSummary(sum)
	if err != nil {
		return err
	}
	var ms int64
	if ttl := r.retention.TTL(rec.Status); ttl > 0 {
		ms = millis(ttl)
	}
	key := r.s.key("rec:", rec.RequestID)
	keys := []string{key, r.s.key(indexKey, "")}
	var res []any
	err = r.s.do(ctx, r.s.timeout, "put record", key, func(ctx context.Context) error {
		var err error
		res, err = putRecordScript.Run(ctx, r.s.client, keys, strconv.FormatInt(rec.Revision, 10), data, ms,
			summary, entryOf(store.PositionOf(sum)), r.trimBound(time.Now()), r.s.key("rec:", "")).Slice()
		return err
	})
	if err != nil {
		return err
	}
	if written, _ := res[0].(int64); written == 1 {
		return nil
	}
	stored := "?"
	if len(res) > 1 {
		stored = fmt.Sprint(res[1])
	}
	return fmt.Errorf("%w: request %q has revision %s, got %d", engine.ErrStaleRevision, rec.RequestID, stored, rec.Revision)
}

// Get implements engine.RecordStore.
func (r *Records) Get(ctx context.Context, requestID string) (*engine.ExecutionRecord, error) {
	key := r.s.key("rec:", requestID)
	var data []byte
	err := r.s.do(ctx, r.s.timeout, "get record", key, func(ctx context.Context) error {
		var err error
		data, err = r.s.client.HGet(ctx, key, "record").Bytes()
		if errors.Is(err, goredis.Nil) {
			data, err = nil, nil
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if data == nil {
		return nil, engine.RecordNotFound(requestID)
	}
	var rec engine.ExecutionRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("decode execution record %q: %w", requestID, err)
	}
	return &rec, nil
}

var (
	_ engine.RecordStore = (*Records)(nil)
	_ store.RecordLister = (*Records)(nil)
)
