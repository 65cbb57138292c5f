package store

import (
	"context"
	"fmt"
	"testing"
	"time"
)

func TestMemory_CacheIsBounded(t *testing.T) {
	m := NewMemory(MemoryOptions{MaxEntries: 3})
	ctx := context.Background()
	for i := range 10 {
		if err := m.PutCache(ctx, fmt.Sprint(i), CacheEntry{Response: "x"}, time.Duration(i+1)*time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if n := m.cache.Len(); n != 3 {
		t.Fatalf("cache holds %d entries, want 3", n)
	}
	if _, ok, _ := m.GetCache(ctx, "9"); !ok {
		t.Fatal("newest entry evicted")
	}
}
