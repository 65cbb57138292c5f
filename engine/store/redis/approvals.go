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

// Approvals live in a hash per slot (fields revision and state, written by the same
// revision-gated script as request states) and a set of the slots, which ListApprovals
// reads and prunes of slots whose hash has expired.

// putApprovalScript is putStateScript for an approval that also adds its slot to the
// set of slots, in the same atomic step.
//
//	KEYS[1] the slot's hash   KEYS[2] the set of slots
//	ARGV[1] revision   ARGV[2] the approval as JSON   ARGV[3] time to live in ms   ARGV[4] the slot
var putApprovalScript = goredis.NewScript(`
local stored = redis.call('HGET', KEYS[1], 'revision')
if stored and tonumber(stored) >= tonumber(ARGV[1]) then
  return {0, stored}
end
redis.call('HSET', KEYS[1], 'revision', ARGV[1], 'state', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('SADD', KEYS[2], ARGV[4])
return {1}
`)

// slotsKey is the set of approval slots.
func (s *Store) slotsKey() string { return s.prefix + "approvals" }

// GetApproval implements engine.ApprovalStore.
func (s *Store) GetApproval(ctx context.Context, slot string) (*engine.Approval, bool, error) {
	key := s.key("apr:", slot)
	var data []byte
	var ok bool
	err := s.do(ctx, s.timeout, "HGET", key, func(ctx context.Context) error {
		var err error
		data, err = s.client.HGet(ctx, key, "state").Bytes()
		if errors.Is(err, goredis.Nil) {
			return nil
		}
		ok = err == nil
		return err
	})
	if err != nil || !ok {
		return nil, false, err
	}
	a, err := store.DecodeApproval(data)
	return a, err == nil, err
}

// PutApproval implements engine.ApprovalStore, revision-gated in one atomic step; ttl
// 0 means store.DefaultApprovalTTL.
func (s *Store) PutApproval(ctx context.Context, a *engine.Approval, ttl time.Duration) error {
	data, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("encode approval: %w", err)
	}
	if ttl <= 0 {
		ttl = store.DefaultApprovalTTL
	}
	key := s.key("apr:", a.Slot)
	var res []any
	err = s.do(ctx, s.timeout, "put approval", key, func(ctx context.Context) error {
		var err error
		res, err = putApprovalScript.Run(ctx, s.client, []string{key, s.slotsKey()}, a.Revision, data, millis(ttl), a.Slot).Slice()
		return err
	})
	if err != nil {
		return err
	}
	if n, _ := res[0].(int64); n != 1 {
		stored, _ := res[1].(string)
		rev, _ := strconv.ParseInt(stored, 10, 64)
		return store.StaleApproval(a, rev)
	}
	return nil
}

// ListApprovals implements engine.ApprovalStore.
func (s *Store) ListApprovals(ctx context.Context) ([]*engine.Approval, error) {
	var slots []string
	err := s.do(ctx, s.timeout, "SMEMBERS", s.slotsKey(), func(ctx context.Context) error {
		var err error
		slots, err = s.client.SMembers(ctx, s.slotsKey()).Result()
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]*engine.Approval, 0, len(slots))
	var gone []any
	for _, slot := range slots {
		a, ok, err := s.GetApproval(ctx, slot)
		if err != nil {
			return nil, err
		}
		if !ok {
			gone = append(gone, slot)
			continue
		}
		out = append(out, a)
	}
	if len(gone) > 0 {
		err = s.do(ctx, s.timeout, "SREM", s.slotsKey(), func(ctx context.Context) error {
			return s.client.SRem(ctx, s.slotsKey(), gone...).Err()
		})
	}
	return out, err
}
