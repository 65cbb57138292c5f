// Package redis keeps agentd's shared state in Redis, so that several agentd replicas
// share request states, response-cache entries, rate-limit windows and execution
// records. Store implements engine.StateStore, store.Cache and store.Limiter; Records
// implements engine.RecordStore on the same connection pool. Both pass the conformance
// suites the in-memory stores pass (storetest).
//
// Failure policy: every operation runs under a short deadline of its own, and every
// failure to reach Redis (refused, reset, timed out, an error reply) is wrapped with
// store.ErrUnavailable, so the daemon answers 503 store_unavailable instead of deciding
// without its state. The package starts no goroutine; the go-redis pool re-dials by
// itself once Redis answers again, so an outage is never sticky.
package redis

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/agentd-dev/agentd/engine/store"
)

// Defaults of the URL options prefix, timeout and cache_timeout.
const (
	DefaultPrefix       = "agentd:"
	DefaultTimeout      = time.Second
	DefaultCacheTimeout = 250 * time.Millisecond
)

// Store is a Redis-backed engine.StateStore, store.Cache and store.Limiter. It is safe for
// concurrent use. Keys:
//
//	<prefix>req:<request id>    request state: a hash of revision and JSON state, expiring after the request TTL
//	<prefix>cache:<cache key>   response-cache entry, JSON, expiring after its TTL
//	<prefix>limit:<limit key>   rate-limit window counter, expiring with the window
//	<prefix>rec:<request id>    execution record (see Records)
type Store struct {
	client *goredis.Client
	// prefix starts every key; deployments sharing one Redis database keep apart by it.
	prefix string
	// timeout bounds each request-state and execution-record operation.
	timeout time.Duration
	// cacheTimeout bounds each response-cache and rate-limit operation. Those serve
	// optional hooks that fail open, so a slow Redis should cost them little time.
	cacheTimeout time.Duration
}

// Open parses a redis:// (or rediss://, unix://) URL and returns a store on it without
// connecting: the first operation dials. Besides the go-redis URL options (dial_timeout,
// pool_size, ...), the query may set prefix (default "agentd:"), timeout (state and
// records, default 1s) and cache_timeout (response cache and rate limits, default
// 250ms), e.g. redis://127.0.0.1:6379/0?prefix=team-a:&timeout=500ms.
func Open(rawURL string) (*Store, error) {
	u, err := url.Parse(rawURL)
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		err = ue.Err // without the URL, which may hold a password
	}
	if err != nil {
		return nil, fmt.Errorf("redis URL: %w", err)
	}
	q := u.Query()
	s := &Store{prefix: cmp.Or(q.Get("prefix"), DefaultPrefix), timeout: DefaultTimeout, cacheTimeout: DefaultCacheTimeout}
	for name, dst := range map[string]*time.Duration{"timeout": &s.timeout, "cache_timeout": &s.cacheTimeout} {
		if v := q.Get(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return nil, fmt.Errorf("redis URL: %s must be a positive duration, got %q", name, v)
			}
			*dst = d
		}
	}
	retries := q.Has("max_retries")
	for _, name := range []string{"prefix", "timeout", "cache_timeout"} {
		q.Del(name)
	}
	u.RawQuery = q.Encode()
	ropts, err := goredis.ParseURL(u.String())
	if err != nil {
		return nil, err
	}
	if !retries {
		// A retried script could apply twice (an event counted twice, a record write
		// reported stale); a failed operation is reported instead, and the next one
		// dials afresh.
		ropts.MaxRetries = -1
	}
	if ropts.DialTimeout == 0 {
		ropts.DialTimeout = s.timeout
	}
	ropts.DialerRetries = 1
	ropts.ContextTimeoutEnabled = true
	ropts.DisableIdentity = true
	ropts.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	s.client = goredis.NewClient(ropts)
	return s, nil
}

// Prefix is the prefix of every key of the store.
func (s *Store) Prefix() string { return s.prefix }

// Ping checks that Redis answers within the store's timeout.
func (s *Store) Ping(ctx context.Context) error {
	return s.do(ctx, s.timeout, "PING", "", func(ctx context.Context) error {
		return s.client.Ping(ctx).Err()
	})
}

// Close closes the connection pool; operations after Close fail.
func (s *Store) Close() error { return s.client.Close() }

// key is the Redis key of id in namespace ns ("req:", "cache:", ...).
func (s *Store) key(ns, id string) string { return s.prefix + ns + id }

// do runs fn under a deadline of timeout and maps its failure: the caller's own
// cancellation is returned as is, anything else is wrapped with store.ErrUnavailable.
func (s *Store) do(ctx context.Context, timeout time.Duration, op, id string, fn func(ctx context.Context) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	octx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := fn(octx)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("redis %s: %w", op, ctx.Err())
	case errors.Is(err, context.DeadlineExceeded):
		err = fmt.Errorf("no answer within %s", timeout)
	}
	if id != "" {
		op += " " + strings.TrimPrefix(id, s.prefix)
	}
	return &unavailableError{op: op, err: err}
}

// unavailableError is a failure to reach Redis: it is store.ErrUnavailable and wraps
// the cause. Its text names no address: it can reach clients (a cache hook's error in
// the invocations a stage call answers).
type unavailableError struct {
	op  string
	err error
}

func (e *unavailableError) Error() string { return "redis " + e.op + ": " + withoutAddress(e.err) }

// withoutAddress renders a network failure without the addresses (or host name) it
// names: "dial: connect: connection refused", "read: i/o timeout".
func withoutAddress(err error) string {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return "lookup: " + dns.Err
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Op + ": " + op.Err.Error()
	}
	return err.Error()
}
func (e *unavailableError) Unwrap() []error { return []error{store.ErrUnavailable, e.err} }

// SetLogger sends the messages of the go-redis client library (dial failures and the
// like; process-wide) to logger at debug level: the store's callers already see and
// report every failure as an error.
func SetLogger(logger *slog.Logger) {
	goredis.SetLogger(slogAdapter{logger})
}

type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) Printf(ctx context.Context, format string, v ...any) {
	a.l.DebugContext(ctx, strings.TrimPrefix(fmt.Sprintf(format, v...), "redis: "), "component", "go-redis")
}
