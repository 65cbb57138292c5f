// Package redistest gives tests a Redis to run against: URL for the shared test
// instance named by AGENTD_TEST_REDIS (each test under a key prefix of its own, deleted
// afterwards), and StartServer for a private redis-server the test may stop, kill and
// restart. Without a Redis the tests skip with the reason, except under CI=true, where
// they fail: CI must never pass by skipping the Redis suites.
package redistest

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// EnvURL names the environment variable holding the shared test Redis URL, e.g.
// redis://127.0.0.1:6390/0.
const EnvURL = "AGENTD_TEST_REDIS"

// Unavailable skips the test, or fails it under CI=true.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI=true: the Redis suites must run)", msg)
	}
	t.Skipf("%s; skipping", msg)
}

// URL returns the shared test Redis URL with a prefix query option unique to t (so
// runs and tests never collide); the keys under it are deleted when t ends.
func URL(t testing.TB) string {
	t.Helper()
	raw := os.Getenv(EnvURL)
	if raw == "" {
		Unavailable(t, "%s is unset: no Redis for the Redis store tests (make test starts one)", EnvURL)
	}
	opts, err := goredis.ParseURL(raw)
	if err != nil {
		t.Fatalf("%s=%q: %v", EnvURL, raw, err)
	}
	if err := ping(opts.Addr); err != nil {
		Unavailable(t, "no Redis answers at %s=%s: %v", EnvURL, raw, err)
	}
	prefix := Prefix(t)
	t.Cleanup(func() { purge(t, opts, prefix) })
	return WithPrefix(raw, prefix)
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// Prefix returns a key prefix unique to t: its name and a random suffix.
func Prefix(t testing.TB) string {
	name := unsafeChars.ReplaceAllString(t.Name(), "_")
	if len(name) > 60 {
		name = name[len(name)-60:]
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "agentdtest:" + name + ":" + hex.EncodeToString(b) + ":"
}

// WithPrefix returns raw with its prefix query option set to prefix.
func WithPrefix(raw, prefix string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	q := u.Query()
	q.Set("prefix", prefix)
	u.RawQuery = q.Encode()
	return u.String()
}

// ping sends PING over a fresh connection and expects PONG within a second.
func ping(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
}

// purge deletes every key under prefix.
func purge(t testing.TB, opts *goredis.Options, prefix string) {
	c := goredis.NewClient(opts)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	iter := c.Scan(ctx, 0, escapeGlob(prefix)+"*", 500).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Logf("purge test keys %s*: %v", prefix, err)
		return
	}
	for len(keys) > 0 {
		n := min(len(keys), 500)
		if err := c.Del(ctx, keys[:n]...).Err(); err != nil {
			t.Logf("purge test keys %s*: %v", prefix, err)
			return
		}
		keys = keys[n:]
	}
}

func escapeGlob(s string) string {
	return strings.NewReplacer(`\`, `\\`, "*", `\*`, "?", `\?`, "[", `\[`, "]", `\]`).Replace(s)
}
