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

// allowScript counts one event in a fixed window that starts with the window's first
// event: INCR, and PEXPIRE on the first event, in one atomic step, so that every
// replica counts into the same window. A counter found without an expiry (written by
// something else) gets one, so that it can never block a key forever.
//
//	KEYS[1] the window's counter   ARGV[1] the window length in milliseconds
var allowScript = goredis.NewScript(`
local n = redis.call('INCR', KEYS[1])
if n == 1 or redis.call('PTTL', KEYS[1]) == -1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
return n
`)

// A request state is a hash: its revision, its runs (the JSON of its step runs, empty
// for none) and the rest (the JSON of the state without its runs), so that a step's
// claim (PutRun) writes the runs alone. A hash written before the split has no runs
// field and the runs in its state.

// putStateScript is the revision-gated write of a request state, one atomic step: it
// writes only when no state is stored or the stored revision is lower, and returns
// {1} when written, {0, stored revision} when stale. Revisions are small counters,
// exact as Lua numbers.
//
//	KEYS[1] the state's hash (fields revision, state, runs)
//	ARGV[1] revision   ARGV[2] the state without its runs as JSON   ARGV[3] time to
//	live in ms   ARGV[4] the runs as JSON
var putStateScript = goredis.NewScript(`
local stored = redis.call('HGET', KEYS[1], 'revision')
if stored and tonumber(stored) >= tonumber(ARGV[1]) then
  return {0, stored}
end
redis.call('HSET', KEYS[1], 'revision', ARGV[1], 'state', ARGV[2], 'runs', ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return {1}
`)

// putRunScript is PutRun in one atomic step: it writes the runs and the revision only
// when the stored revision is the one before, and the state stays within the size
// limit; it returns {1} when written, {0} when stale, {2, size} when too large.
//
//	KEYS[1] the state's hash   ARGV[1] revision   ARGV[2] the runs as JSON   ARGV[3] time
//	to live in ms   ARGV[4] the limit in bytes of the state's encoding
var putRunScript = goredis.NewScript(`
local stored = redis.call('HGET', KEYS[1], 'revision')
if not stored or tonumber(stored) ~= tonumber(ARGV[1]) - 1 then
  return {0}
end
local size = redis.call('HSTRLEN', KEYS[1], 'state') + string.len(ARGV[2])
if size > tonumber(ARGV[4]) then
  return {2, size}
end
redis.call('HSET', KEYS[1], 'revision', ARGV[1], 'runs', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return {1}
`)

// GetRequest implements engine.StateStore.
func (s *Store) GetRequest(ctx context.Context, id string) (*engine.RequestState, bool, error) {
	key := s.key("req:", id)
	var fields []any
	err := s.do(ctx, s.timeout, "HMGET", key, func(ctx context.Context) error {
		var err error
		fields, err = s.client.HMGet(ctx, key, "revision", "state", "runs").Result()
		return err
	})
	if err != nil {
		return nil, false, err
	}
	revision, _ := fields[0].(string)
	data, _ := fields[1].(string)
	runs, _ := fields[2].(string)
	if data == "" {
		return nil, false, nil
	}
	st, err := store.DecodeState([]byte(data), []byte(runs))
	if err == nil {
		// A PutRun changes the revision field and leaves the state's JSON as it was.
		st.Revision, err = strconv.ParseInt(revision, 10, 64)
	}
	if err != nil {
		return nil, false, fmt.Errorf("decode request state %q: %w", id, err)
	}
	return st, true, nil
}

// PutRun implements engine.RunStore in one atomic step (a Lua script that writes the
// runs and the revision of the state's hash); ttl 0 means store.DefaultRequestTTL.
func (s *Store) PutRun(ctx context.Context, id string, revision int64, step string, runs map[string]*engine.StepRun, ttl time.Duration) error {
	data, err := store.EncodeRuns(runs)
	if err != nil {
		return err
	}
	if ttl <= 0 {
		ttl = store.DefaultRequestTTL
	}
	key := s.key("req:", id)
	var res []any
	err = s.do(ctx, s.timeout, "put run", key, func(ctx context.Context) error {
		var err error
		res, err = putRunScript.Run(ctx, s.client, []string{key}, revision, data, millis(ttl), store.DefaultMaxStateBytes).Slice()
		return err
	})
	if err != nil {
		return err
	}
	switch n, _ := res[0].(int64); n {
	case 1:
		return nil
	case 2:
		return fmt.Errorf("%w: request %q state would be %v bytes, over the limit of %d", engine.ErrTooLarge, id, res[1], store.DefaultMaxStateBytes)
	}
	return fmt.Errorf("%w: request %q state is not at revision %d", engine.ErrStaleRevision, id, revision-1)
}

// PutRequest implements engine.StateStore, revision-gated in one atomic step; ttl 0
// means store.DefaultRequestTTL.
func (s *Store) PutRequest(ctx context.Context, st *engine.RequestState, ttl time.Duration) error {
	data, runs, err := store.EncodeState(st)
	if err != nil {
		return err
	}
	if size := len(data) + len(runs); size > store.DefaultMaxStateBytes {
		return fmt.Errorf("%w: request %q state is %d bytes, over the limit of %d", engine.ErrTooLarge, st.ID, size, store.DefaultMaxStateBytes)
	}
	if ttl <= 0 {
		ttl = store.DefaultRequestTTL
	}
	key := s.key("req:", st.ID)
	var res []any
	err = s.do(ctx, s.timeout, "put state", key, func(ctx context.Context) error {
		var err error
		res, err = putStateScript.Run(ctx, s.client, []string{key}, st.Revision, data, millis(ttl), runs).Slice()
		return err
	})
	if err != nil {
		return err
	}
	if n, _ := res[0].(int64); n != 1 {
		return fmt.Errorf("%w: request %q state has revision %v, got %d", engine.ErrStaleRevision, st.ID, res[1], st.Revision)
	}
	return nil
}

// GetCache implements store.Cache.
func (s *Store) GetCache(ctx context.Context, key string) (store.CacheEntry, bool, error) {
	data, ok, err := s.get(ctx, s.cacheTimeout, s.key("cache:", key))
	if err != nil || !ok {
		return store.CacheEntry{}, false, err
	}
	var e store.CacheEntry
	if err := json.Unmarshal(data, &e); err != nil {
		return store.CacheEntry{}, false, fmt.Errorf("decode cache entry: %w", err)
	}
	return e, true, nil
}

// PutCache implements store.Cache; ttl 0 means store.DefaultCacheTTL.
func (s *Store) PutCache(ctx context.Context, key string, e store.CacheEntry, ttl time.Duration) error {
	data, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode cache entry: %w", err)
	}
	if ttl <= 0 {
		ttl = store.DefaultCacheTTL
	}
	return s.set(ctx, s.cacheTimeout, s.key("cache:", key), data, ttl)
}

// Allow implements store.Limiter with fixed windows aligned to the first event; the
// window is shared by every store on the same Redis and prefix.
func (s *Store) Allow(ctx context.Context, key string, limit int, window time.Duration) (bool, error) {
	k := s.key("limit:", key)
	var n int64
	err := s.do(ctx, s.cacheTimeout, "rate limit", k, func(ctx context.Context) error {
		var err error
		n, err = allowScript.Run(ctx, s.client, []string{k}, millis(window)).Int64()
		return err
	})
	if err != nil {
		return false, err
	}
	return n <= int64(limit), nil
}

// get reads a string key; ok is false when the key is absent or expired.
func (s *Store) get(ctx context.Context, timeout time.Duration, key string) (data []byte, ok bool, err error) {
	err = s.do(ctx, timeout, "GET", key, func(ctx context.Context) error {
		var err error
		data, err = s.client.Get(ctx, key).Bytes()
		if errors.Is(err, goredis.Nil) {
			return nil
		}
		ok = err == nil
		return err
	})
	return data, ok, err
}

func (s *Store) set(ctx context.Context, timeout time.Duration, key string, data []byte, ttl time.Duration) error {
	return s.do(ctx, timeout, "SET", key, func(ctx context.Context) error {
		return s.client.Set(ctx, key, data, time.Duration(millis(ttl))*time.Millisecond).Err()
	})
}

// millis is d in whole milliseconds, at least 1.
func millis(d time.Duration) int64 {
	return max(d.Milliseconds(), 1)
}

var (
	_ engine.StateStore = (*Store)(nil)
	_ engine.RunStore   = (*Store)(nil)
	_ store.Cache       = (*Store)(nil)
	_ store.Limiter     = (*Store)(nil)
)
