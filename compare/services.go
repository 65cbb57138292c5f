package compare

import (
	"context"
	"log/slog"
	"time"

	"github.com/agentd-dev/agentd/builtin"
	"github.com/agentd-dev/agentd/engine/store"
)

// Services are the built-in actions' services of a generation that must write
// nothing: its response cache never answers and stores nothing, its rate limits count
// nothing and never trip. logger gets the log action's lines.
func Services(logger *slog.Logger) builtin.Services {
	return builtin.Services{Cache: inertCache{}, Limiter: inertLimiter{}, Logger: logger}
}

type inertCache struct{}

func (inertCache) GetCache(context.Context, string) (store.CacheEntry, bool, error) {
	return store.CacheEntry{}, false, nil
}

func (inertCache) PutCache(context.Context, string, store.CacheEntry, time.Duration) error {
	return nil
}

type inertLimiter struct{}

func (inertLimiter) Allow(context.Context, string, int, time.Duration) (bool, error) {
	return true, nil
}
