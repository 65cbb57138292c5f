package redis_test

import (
	"context"
	"errors"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/store"
	"github.com/agentd-dev/agentd/engine/store/redis"
	"github.com/agentd-dev/agentd/engine/store/redis/redistest"
	"github.com/agentd-dev/agentd/engine/store/storetest"
)

// open returns a store on the shared test Redis under a key prefix unique to t.
func open(t *testing.T) *redis.Store {
	t.Helper()
	s, err := redis.Open(redistest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestStore_Conformance(t *testing.T) {
	storetest.States(t, func(t *testing.T) engine.StateStore { return open(t) })
	storetest.Cache(t, func(t *testing.T) store.Cache { return open(t) })
	storetest.Limiter(t, func(t *testing.T) store.Limiter { return open(t) })
}

// redisStores is one replica's view of Redis: its state store and its record store.
type redisStores struct {
	*redis.Store
	*redis.Records
}

func (s redisStores) Get(ctx context.Context, id string) (*engine.ExecutionRecord, error) {
	return s.Records.Get(ctx, id)
}

func (s redisStores) Put(ctx context.Context, rec *engine.ExecutionRecord) error {
	return s.Records.Put(ctx, rec)
}

// Two stores on one prefix are two replicas sharing Redis.
func TestStore_Binding(t *testing.T) {
	storetest.Binding(t, func(t *testing.T) (storetest.Stores, storetest.Stores) {
		url := redistest.URL(t)
		replica := func() storetest.Stores {
			s, err := redis.Open(url)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return redisStores{s, s.Records(store.Retention{})}
		}
		return replica(), replica()
	})
}

func TestRecords_Conformance(t *testing.T) {
	storetest.Records(t, func(t *testing.T) engine.RecordStore { return open(t).Records(store.Retention{}) })
}

func TestRecords_RetentionByOutcome(t *testing.T) {
	r := open(t).Records(store.Retention{Success: 50 * time.Millisecond, Error: time.Hour})
	ctx := context.Background()
	for _, rec := range []*engine.ExecutionRecord{
		{RequestID: "ok", Status: engine.RecordSucceeded, Revision: 1},
		{RequestID: "bad", Status: engine.RecordFailed, Revision: 1},
		{RequestID: "running", Status: engine.RecordRunning, Revision: 1},
	} {
		if err := r.Put(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := r.Get(ctx, "ok")
		if errors.Is(err, engine.ErrRecordNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("success record outlived its 50ms retention: err = %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, id := range []string{"bad", "running"} {
		if _, err := r.Get(ctx, id); err != nil {
			t.Fatalf("%s record within its error retention: %v", id, err)
		}
	}
}

func TestRecords_RetentionFollowsTheLatestOutcome(t *testing.T) {
	s := open(t)
	r := s.Records(store.Retention{Success: 50 * time.Millisecond, Error: time.Hour})
	ctx := context.Background()
	if err := r.Put(ctx, &engine.ExecutionRecord{RequestID: "r", Status: engine.RecordRunning, Revision: 1}); err != nil {
		t.Fatal(err)
	}
	if err := r.Put(ctx, &engine.ExecutionRecord{RequestID: "r", Status: engine.RecordSucceeded, Revision: 2}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if _, err := r.Get(ctx, "r"); !errors.Is(err, engine.ErrRecordNotFound) {
		t.Fatalf("a record rewritten as succeeded kept its running retention: err = %v", err)
	}
	keep := s.Records(store.Retention{})
	if err := keep.Put(ctx, &engine.ExecutionRecord{RequestID: "k", Status: engine.RecordSucceeded, Revision: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := keep.Get(ctx, "k"); err != nil {
		t.Fatalf("zero retention keeps the record: %v", err)
	}
}

// Revisions beyond 2^53 compare exactly, although Lua numbers are doubles.
func TestRecords_RevisionsCompareExactly(t *testing.T) {
	r := open(t).Records(store.Retention{})
	ctx := context.Background()
	const big = int64(1) << 53
	if err := r.Put(ctx, &engine.ExecutionRecord{RequestID: "r", Revision: big + 1}); err != nil {
		t.Fatal(err)
	}
	if err := r.Put(ctx, &engine.ExecutionRecord{RequestID: "r", Revision: big}); !errors.Is(err, engine.ErrStaleRevision) {
		t.Fatalf("revision 2^53 over 2^53+1: err = %v, want ErrStaleRevision", err)
	}
	if err := r.Put(ctx, &engine.ExecutionRecord{RequestID: "r", Revision: big + 2}); err != nil {
		t.Fatalf("revision 2^53+2 over 2^53+1: %v", err)
	}
	if err := r.Put(ctx, &engine.ExecutionRecord{RequestID: "n", Revision: -5}); err != nil {
		t.Fatal(err)
	}
	if err := r.Put(ctx, &engine.ExecutionRecord{RequestID: "n", Revision: -12}); !errors.Is(err, engine.ErrStaleRevision) {
		t.Fatalf("revision -12 over -5: err = %v, want ErrStaleRevision", err)
	}
	if err := r.Put(ctx, &engine.ExecutionRecord{RequestID: "n", Revision: 0}); err != nil {
		t.Fatalf("revision 0 over -5: %v", err)
	}
}

// Two stores on the same Redis and prefix are two replicas: they share everything.
func TestStore_ReplicasShareStateAndLimits(t *testing.T) {
	url := redistest.URL(t)
	var replicas [2]*redis.Store
	for i := range replicas {
		s, err := redis.Open(url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		replicas[i] = s
	}
	a, b := replicas[0], replicas[1]
	ctx := context.Background()
	if err := a.PutRequest(ctx, &engine.RequestState{ID: "r", Generation: "g"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if st, ok, err := b.GetRequest(ctx, "r"); err != nil || !ok || st.Generation != "g" {
		t.Fatalf("replica b reads %+v, %v, %v", st, ok, err)
	}
	if err := a.PutCache(ctx, "k", store.CacheEntry{Response: "cached"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if e, ok, err := b.GetCache(ctx, "k"); err != nil || !ok || e.Response != "cached" {
		t.Fatalf("replica b cache = %+v, %v, %v", e, ok, err)
	}
	var mu sync.Mutex
	allowed := 0
	var wg sync.WaitGroup
	for i := range 30 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := replicas[i%2].Allow(ctx, "tenant", 7, time.Hour)
			if err != nil {
				t.Error(err)
			}
			if ok {
				mu.Lock()
				allowed++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if allowed != 7 {
		t.Fatalf("two replicas allowed %d of 30 with limit 7", allowed)
	}
}

// A store whose Redis refuses connections answers ErrUnavailable fast, for every
// operation; a canceled caller gets its own error, not ErrUnavailable.
func TestStore_RefusedIsUnavailable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s, err := redis.Open("redis://" + addr + "/0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	assertUnavailable(t, s, 2*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := s.GetRequest(ctx, "r"); err == nil || errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("canceled caller: err = %v, want the context's error", err)
	}
}

// TestHardening_UnavailableErrorsNameNoAddress: the error of an unreachable Redis
// (which a cache hook's invocation carries to the client) names no address.
func TestHardening_UnavailableErrorsNameNoAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s, err := redis.Open("redis://" + addr + "/0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, port, _ := net.SplitHostPort(addr)
	_, _, err = s.GetRequest(context.Background(), "r")
	if !errors.Is(err, store.ErrUnavailable) || strings.Contains(err.Error(), port) || strings.Contains(err.Error(), "127.0.0.1") {
		t.Fatalf("error %v names Redis's address (or is not ErrUnavailable)", err)
	}
	if !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("error %v does not say why", err)
	}
}

// A Redis that accepts connections but never answers costs each operation its
// timeout, and no more.
func TestStore_SilentIsUnavailableWithinTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never answered
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	}()
	s, err := redis.Open("redis://" + ln.Addr().String() + "/0?timeout=200ms&cache_timeout=100ms")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	assertUnavailable(t, s, 1500*time.Millisecond)
}

func assertUnavailable(t *testing.T, s *redis.Store, within time.Duration) {
	t.Helper()
	ctx := context.Background()
	ops := map[string]func() error{
		"GetRequest": func() error { _, _, err := s.GetRequest(ctx, "r"); return err },
		"PutRequest": func() error { return s.PutRequest(ctx, &engine.RequestState{ID: "r"}, time.Minute) },
		"GetCache":   func() error { _, _, err := s.GetCache(ctx, "k"); return err },
		"PutCache":   func() error { return s.PutCache(ctx, "k", store.CacheEntry{}, time.Minute) },
		"Allow":      func() error { _, err := s.Allow(ctx, "k", 1, time.Minute); return err },
		"Record.Put": func() error {
			return s.Records(store.Retention{}).Put(ctx, &engine.ExecutionRecord{RequestID: "r", Revision: 1})
		},
		"Record.Get": func() error { _, err := s.Records(store.Retention{}).Get(ctx, "r"); return err },
		"Ping":       func() error { return s.Ping(ctx) },
	}
	for name, op := range ops {
		start := time.Now()
		err := op()
		if took := time.Since(start); took > within {
			t.Errorf("%s took %s, want at most %s", name, took, within)
		}
		if !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s: err = %v, want store.ErrUnavailable", name, err)
		}
	}
}

func TestOpen_URLOptions(t *testing.T) {
	s, err := redis.Open("redis://127.0.0.1:1/2?prefix=team-a:&timeout=300ms&cache_timeout=50ms&pool_size=4")
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s.Prefix() != "team-a:" {
		t.Fatalf("prefix = %q", s.Prefix())
	}
	d, err := redis.Open("redis://127.0.0.1:1/0")
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	if d.Prefix() != redis.DefaultPrefix {
		t.Fatalf("default prefix = %q", d.Prefix())
	}
	for _, bad := range []string{
		"redis://127.0.0.1:1/0?timeout=soon",
		"redis://127.0.0.1:1/0?cache_timeout=-1s",
		"redis://127.0.0.1:1/0?no_such_option=1",
		"redis://127.0.0.1:1/x",
		"http://127.0.0.1:1/0",
	} {
		if _, err := redis.Open(bad); err == nil {
			t.Errorf("Open(%q) accepted", bad)
		} else if !strings.Contains(err.Error(), "redis") {
			t.Errorf("Open(%q) error does not say redis: %v", bad, err)
		}
	}
}

// A store recovers by itself when Redis comes back: no failure is sticky.
func TestStore_RecoversWhenRedisReturns(t *testing.T) {
	srv := redistest.StartServer(t)
	s, err := redis.Open(srv.URL() + "?timeout=300ms")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	st := &engine.RequestState{ID: "before", Generation: "g"}
	if err := s.PutRequest(ctx, st, time.Minute); err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	for range 20 { // enough failures to trip go-redis' dial back-off
		if _, _, err := s.GetRequest(ctx, "before"); !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("with Redis down: err = %v, want ErrUnavailable", err)
		}
	}
	srv.Start()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, ok, err := s.GetRequest(ctx, "before")
		if err == nil {
			if !ok || got.Generation != "g" {
				t.Fatalf("after restart: %+v, %v (the acknowledged write is lost)", got, ok)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no recovery within 10s of Redis returning: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The store starts no goroutine of its own, and the client's dial probe ends with
// Close: nothing outlives the store.
func TestStore_CloseLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s, err := redis.Open("redis://" + addr + "/0?pool_size=2")
	if err != nil {
		t.Fatal(err)
	}
	for range 10 { // enough refused dials to start go-redis' background dial probe
		_, _, _ = s.GetRequest(context.Background(), "r")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines before Open, %d 5s after Close:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestRecords_Query(t *testing.T) {
	storetest.Query(t, func(t *testing.T) store.QueryableRecords { return open(t).Records(store.Retention{}) })
}

// Two stores on one prefix are two replicas sharing Redis.
func TestStore_Approvals(t *testing.T) {
	storetest.Approvals(t, func(t *testing.T) (storetest.ApprovalStores, storetest.ApprovalStores) {
		url := redistest.URL(t)
		replica := func() storetest.ApprovalStores {
			s, err := redis.Open(url)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
		return replica(), replica()
	})
}
