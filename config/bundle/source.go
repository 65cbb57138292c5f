package bundle

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/config/reload"
)

// SourceOptions configure a Source.
type SourceOptions struct {
	// Location is the bundle: a file path, or an http:// or https:// URL.
	Location string
	// Open says which signatures a bundle must carry and bounds its size.
	Open OpenOptions
	// Poll is how often Run fetches the bundle again; 0 or less: never.
	Poll time.Duration
	// Client fetches URLs; nil means a client with a 30s timeout.
	Client        *http.Client
	Logger        *slog.Logger
	MeterProvider metric.MeterProvider
}

// Time bounds of the fetches a Source makes on its own.
const (
	// maxBackoff is how many poll periods at most separate fetches after failures.
	maxBackoff = 4
	// missInterval is the least time between two fetches a registry miss starts.
	missInterval = 100 * time.Millisecond
	// missTimeout bounds a fetch a registry miss starts.
	missTimeout = 5 * time.Second
)

// Source keeps a registry live on a bundle: Update fetches it, verifies it (Open),
// extracts it into a directory of the source's own and compiles it with its reloader
// under the bundle's revision. A bundle that fails anywhere never goes live: the last
// good generation keeps serving, and the failure is in Status, the log and the
// agentd.bundle.loads metric. Updates run one at a time. The source also makes the
// registry fetch on a miss (reload.Registry.OnMiss): a request that opened on a
// replica already running a newer revision finds that revision here too, once the
// bundle server serves it. Close removes the source's directory.
type Source struct {
	opts     SourceOptions
	name     string
	work     string
	reloader *reload.Reloader
	registry *reload.Registry
	logger   *slog.Logger
	loads    metric.Int64Counter

	mu          sync.Mutex // held by update
	status      Status
	etag        string
	digest      [sha256.Size]byte // of the last activated bundle's bytes
	live        string            // the extracted directory the live generation came from
	seq         int
	failures    int
	lastAttempt time.Time
}

// NewSource returns a source of opts.Location that compiles into registry with load's
// options and the reload policies options (see reload.NewReloader), and sets the
// registry's miss handler. Nothing is fetched until Update.
func NewSource(opts SourceOptions, registry *reload.Registry, load config.Options, options ...reload.Option) (*Source, error) {
	if opts.Client == nil {
		opts.Client = &http.Client{Timeout: 30 * time.Second}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	mp := opts.MeterProvider
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	loads, err := mp.Meter("github.com/agentd-dev/agentd/config/bundle").Int64Counter("agentd.bundle.loads",
		metric.WithDescription("bundle fetches by result (ok, unchanged, not_modified, error) and failure code"))
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "agentd-bundle-")
	if err != nil {
		return nil, err
	}
	s := &Source{opts: opts, name: nameOf(opts.Location), work: work, registry: registry, logger: opts.Logger, loads: loads}
	s.status = Status{Name: s.name}
	s.reloader, err = reload.NewReloader(s.Dir(), load, registry, opts.Logger, opts.MeterProvider, options...)
	if err != nil {
		_ = os.RemoveAll(work)
		return nil, err
	}
	registry.OnMiss(s.onMiss)
	return s, nil
}

// nameOf names a bundle in Status by its location's last path element without the
// archive extension.
func nameOf(location string) string {
	base := path.Base(filepath.ToSlash(strings.SplitN(location, "?", 2)[0]))
	for _, ext := range []string{".tar.gz", ".tgz"} {
		base = strings.TrimSuffix(base, ext)
	}
	if base == "" || base == "." || base == "/" {
		return "bundle"
	}
	return base
}

// Name is the bundle's name in Status.
func (s *Source) Name() string { return s.name }

// Dir is the config directory the reloader compiles: a symlink to the extracted
// bundle being activated or live.
func (s *Source) Dir() string { return filepath.Join(s.work, "current") }

// Status returns the bundle's status.
func (s *Source) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

// Close removes the extracted bundles. The live generation keeps serving; it no longer
// needs its files.
func (s *Source) Close() error { return os.RemoveAll(s.work) }

// Update fetches the bundle once and, when it changed, activates it. It returns the
// failure (a *Error) or nil; "not modified" is nil.
func (s *Source) Update(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.update(ctx)
}

// Run updates every Poll until ctx is done; after a failure it waits twice as long as
// before, at most maxBackoff poll periods, plus up to a tenth of that at random so
// replicas spread out. It returns at once when Poll is 0.
func (s *Source) Run(ctx context.Context) {
	if s.opts.Poll <= 0 {
		return
	}
	for {
		s.mu.Lock()
		failures := s.failures
		s.mu.Unlock()
		delay := s.opts.Poll << min(failures, 2)
		delay = min(delay, maxBackoff*s.opts.Poll)
		delay += rand.N(delay/10 + 1)
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		_ = s.Update(ctx)
	}
}

// onMiss is the registry's miss handler: one fetch, unless one started after the miss
// did (its answer is as new as this one's would be; concurrent misses wait for it) or
// in the last missInterval (requests of a retired generation do not start a fetch per
// call).
func (s *Source) onMiss(string) {
	missed := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.lastAttempt.Before(missed) || time.Since(s.lastAttempt) < missInterval {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), missTimeout)
	defer cancel()
	_ = s.update(ctx)
}

// update is Update with s.mu held.
func (s *Source) update(ctx context.Context) error {
	now := time.Now().UTC()
	s.lastAttempt, s.status.LastRequest = now, now
	data, etag, err := s.fetch(ctx)
	if err != nil {
		return s.failed(ctx, err)
	}
	s.status.LastSuccessfulRequest = now
	if data == nil || sha256.Sum256(data) == s.digest {
		s.failures, s.status.Code, s.status.Message, s.status.HTTPCode = 0, "", "", ""
		s.loads.Add(ctx, 1, metric.WithAttributes(attribute.String("result", "not_modified")))
		return nil
	}
	s.status.LastSuccessfulDownload = now
	a, err := Open(bytes.NewReader(data), s.opts.Open)
	if err != nil {
		return s.failed(ctx, err)
	}
	gen, err := s.activate(ctx, a)
	if err != nil {
		return s.failed(ctx, err)
	}
	result := "ok"
	if gen.ID == s.status.ActiveRevision {
		result = "unchanged"
	}
	s.etag, s.digest, s.failures = etag, sha256.Sum256(data), 0
	s.status = Status{Name: s.name, ActiveRevision: gen.ID, LastSuccessfulActivation: time.Now().UTC(), Type: "snapshot", Size: len(data),
		LastSuccessfulDownload: now, LastSuccessfulRequest: now, LastRequest: now}
	s.loads.Add(ctx, 1, metric.WithAttributes(attribute.String("result", result)))
	s.logger.InfoContext(ctx, "bundle live", "bundle", s.name, "revision", gen.ID, "signed", a.Signed, "files", len(a.Files), "result", result)
	return nil
}

// failed records a failed update: Status, metric and log. The live generation stays.
func (s *Source) failed(ctx context.Context, err error) error {
	s.failures++
	kind := KindOf(err)
	s.status.Code, s.status.Message = string(kind), err.Error()
	s.loads.Add(ctx, 1, metric.WithAttributes(attribute.String("result", "error"), attribute.String("code", string(kind))))
	s.logger.ErrorContext(ctx, "bundle refused; the last good revision keeps serving", "bundle", s.name, "code", string(kind),
		"error", err.Error(), "active_revision", s.status.ActiveRevision)
	return err
}

// fetch returns the bundle's bytes and ETag, nil bytes when the server answers 304.
func (s *Source) fetch(ctx context.Context) ([]byte, string, error) {
	limit := 2 * max(s.opts.Open.MaxBytes, DefaultMaxBytes)
	loc := s.opts.Location
	if !strings.HasPrefix(loc, "http://") && !strings.HasPrefix(loc, "https://") {
		f, err := os.Open(loc)
		if err != nil {
			return nil, "", fail(KindDownload, "", err)
		}
		defer f.Close()
		data, err := readLimited(f, limit)
		return data, "", err
	}
	s.status.HTTPCode = ""
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, loc, nil)
	if err != nil {
		return nil, "", fail(KindDownload, "", err)
	}
	if s.etag != "" {
		req.Header.Set("If-None-Match", s.etag)
	}
	resp, err := s.opts.Client.Do(req)
	if err != nil {
		return nil, "", fail(KindDownload, "", err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusNotModified:
		return nil, s.etag, nil
	case http.StatusOK:
		data, err := readLimited(resp.Body, limit)
		return data, resp.Header.Get("ETag"), err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	s.status.HTTPCode = json.Number(strconv.Itoa(resp.StatusCode))
	return nil, "", &Error{Kind: KindDownload, Message: "server answered " + resp.Status}
}

// readLimited reads r, failing past limit bytes.
func readLimited(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err == nil && int64(len(data)) > limit {
		err = fmt.Errorf("larger than %d bytes", limit)
	}
	if err != nil {
		return nil, fail(KindDownload, "", err)
	}
	return data, nil
}

// activate extracts a into a fresh directory, points Dir at it and compiles it under
// its revision. On failure Dir points back at the live bundle's directory and the new
// one is removed; on success the previous one is.
func (s *Source) activate(ctx context.Context, a *Archive) (*config.Generation, error) {
	s.seq++
	dir := filepath.Join(s.work, "r"+strconv.Itoa(s.seq))
	if err := a.WriteDir(dir); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fail(KindActivation, "", err)
	}
	if err := s.point(dir); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fail(KindActivation, "", err)
	}
	gen, err := s.reloader.ReloadAs(ctx, a.Revision)
	if err != nil {
		if s.live != "" {
			_ = s.point(s.live)
		}
		_ = os.RemoveAll(dir)
		kind := KindActivation
		if _, ok := errors.AsType[*reload.RevisionError](err); ok {
			kind = KindRevisionConflict
		}
		return nil, &Error{Kind: kind, Message: s.registry.Status().Error, Err: err}
	}
	if s.live != "" {
		_ = os.RemoveAll(s.live)
	}
	s.live = dir
	return gen, nil
}

// point makes Dir a symlink to dir, replacing the old link in one rename.
func (s *Source) point(dir string) error {
	tmp := s.Dir() + ".next"
	_ = os.Remove(tmp)
	if err := os.Symlink(filepath.Base(dir), tmp); err != nil {
		return err
	}
	return os.Rename(tmp, s.Dir())
}
