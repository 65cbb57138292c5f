package reload

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine/diag"
)

// Reloader compiles a config directory into its Registry. Reload calls are serialized;
// each builds a complete generation aside and swaps it in only if everything compiled.
type Reloader struct {
	dir               string
	opts              config.Options
	registry          *Registry
	logger            *slog.Logger
	mu                sync.Mutex
	reloads           metric.Int64Counter
	requirePlanReview bool
	load              func(dir string, opts config.Options) (*config.Generation, error) // config.Load
}

// Option configures a Reloader.
type Option func(*Reloader)

// RequirePlanReview refuses every generation without an enforcing required
// after_planning hook, the first one included (serve's default; --allow-no-plan-review
// leaves it out).
func RequirePlanReview() Option { return func(r *Reloader) { r.requirePlanReview = true } }

// NewReloader returns a reloader of dir into registry. mp may be nil. The services of
// opts are fixed once here, so every generation shares one cache and one set of rate
// limit counters.
func NewReloader(dir string, opts config.Options, registry *Registry, logger *slog.Logger, mp metric.MeterProvider, options ...Option) (*Reloader, error) {
	opts.Services = opts.Services.WithDefaults()
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m := mp.Meter("github.com/agentd-dev/agentd/config/reload")
	reloads, err := m.Int64Counter("agentd.config.reloads", metric.WithDescription("config reload attempts by result"))
	if err != nil {
		return nil, err
	}
	r := &Reloader{dir: dir, opts: opts, registry: registry, logger: logger, reloads: reloads, load: config.Load}
	for _, o := range options {
		o(r)
	}
	_, err = m.Int64ObservableGauge("agentd.config.generation",
		metric.WithDescription("1 for the live config generation, labelled by its id"),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			if g := registry.Current(); g != nil {
				o.Observe(1, metric.WithAttributes(attribute.String("generation", g.ID)))
			}
			return nil
		}))
	if err != nil {
		return nil, err
	}
	_, err = m.Float64ObservableGauge("agentd.config.last_reload_success",
		metric.WithDescription("Unix time of the last successful reload"), metric.WithUnit("s"),
		metric.WithFloat64Callback(func(_ context.Context, o metric.Float64Observer) error {
			if s := registry.Status(); !s.LastGood.IsZero() {
				o.Observe(float64(s.LastGood.UnixNano()) / 1e9)
			}
			return nil
		}))
	return r, err
}

// Reload compiles the directory and, on success, makes the result live. A generation
// that compiles but would drop part of the boundary the live one enforces is refused
// like a compile error (see BoundaryError). On failure the live generation keeps
// serving, the error is logged, counted (result "error", or "refused" for a boundary)
// and kept in the registry's Status, and returned. A panic while compiling (a bug in
// agentd or a library it compiles with, on some input) is such a failure too: a config
// never takes the daemon down.
func (r *Reloader) Reload(ctx context.Context) (*config.Generation, error) {
	return r.ReloadAs(ctx, "")
}

// ReloadAs is Reload under a bundle revision: when revision is not empty it is the new
// generation's ID instead of the content hash, so replicas that load one bundle
// revision run generations of one identity and a request can move between them. A
// revision that a retained generation already has with other content is refused (see
// RevisionError): one id never stands for two configs.
func (r *Reloader) ReloadAs(ctx context.Context, revision string) (*config.Generation, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	gen, err := r.compile(ctx)
	result := "error"
	if err == nil {
		if revision != "" {
			gen.ID = revision
		}
		if err = r.admit(gen); err != nil {
			result = "refused"
		}
	}
	if err != nil {
		rendered := r.render(err)
		r.registry.Fail(rendered)
		r.reloads.Add(ctx, 1, metric.WithAttributes(attribute.String("result", result)))
		r.logger.ErrorContext(ctx, "config reload failed; the last good generation keeps serving",
			"dir", r.dir, "error", rendered, "generation", r.registry.Status().Generation)
		return nil, err
	}
	if cur := r.registry.Current(); cur != nil && cur.ID == gen.ID {
		r.registry.Swap(cur)
		r.reloads.Add(ctx, 1, metric.WithAttributes(attribute.String("result", "unchanged")))
		return cur, nil
	}
	r.registry.Swap(gen)
	r.reloads.Add(ctx, 1, metric.WithAttributes(attribute.String("result", "ok")))
	r.logger.InfoContext(ctx, "config generation live", "generation", gen.ID, "files", len(gen.Files), "hooks", len(gen.Hooks))
	return gen, nil
}

// admit refuses a compiled generation that may not replace the live one: a weaker
// boundary, or an id a retained generation of other content has.
func (r *Reloader) admit(gen *config.Generation) error {
	if old := r.registry.Get(gen.ID); old != nil && old.Digest != gen.Digest {
		return &RevisionError{Revision: gen.ID, Retained: old.Digest, Loaded: gen.Digest}
	}
	return r.boundary(gen)
}

// RevisionError refuses a bundle revision that a retained generation already has with
// other content: a bundle rebuilt without a new revision.
type RevisionError struct {
	Revision string
	// Retained and Loaded are the content hashes of the retained and the new files.
	Retained, Loaded string
}

func (e *RevisionError) Error() string {
	return fmt.Sprintf("revision %q is already loaded with other content (%s, now %s): give a changed bundle a new revision", e.Revision, e.Retained, e.Loaded)
}

// compile loads the directory, turning a panic into an error (logged with its stack).
func (r *Reloader) compile(ctx context.Context) (gen *config.Generation, err error) {
	defer func() {
		if v := recover(); v != nil {
			gen, err = nil, fmt.Errorf("compiling the config failed unexpectedly (a bug, please report it): %v", v)
			r.logger.ErrorContext(ctx, "config compile panicked", "dir", r.dir, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		}
	}()
	return r.load(r.dir, r.opts)
}

// render prints config errors as `file:line:col: kind: message` lines with source.
func (r *Reloader) render(err error) string {
	list, ok := diag.AsList(err)
	if !ok {
		return err.Error()
	}
	var b bytes.Buffer
	list.Render(&b, func(file string) ([]byte, bool) {
		data, err := os.ReadFile(filepath.Join(r.dir, filepath.FromSlash(file)))
		return data, err == nil
	})
	return b.String()
}
