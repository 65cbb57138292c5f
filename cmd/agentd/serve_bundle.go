package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/config/bundle"
	"github.com/agentd-dev/agentd/config/reload"
)

// bundleFlags are serve's flags for a config that comes as a bundle.
type bundleFlags struct {
	location, verificationKey string
	poll                      time.Duration
	keep                      int
}

func (b *bundleFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&b.location, "bundle", "", "serve a bundle (agentd build) instead of --config: a file or an http(s) URL; its revision is the generation's id")
	fs.StringVar(&b.verificationKey, "verification-key", "", "with --bundle: a file holding the key the bundle's signature must verify under (PEM public key or certificate: RS256/ES256; anything else: the HS256 secret); unsigned bundles are then refused")
	fs.DurationVar(&b.poll, "bundle-poll", 30*time.Second, "with --bundle: how often to fetch it again (HTTP: If-None-Match); 0: never (SIGHUP still does)")
	fs.IntVar(&b.keep, "keep-generations", 8, fmt.Sprintf("config generations (bundle revisions) kept for requests that opened on them, the live one included: 1 to %d", reload.MaxKeep))
}

// check reports a flag mistake; config is --config.
func (b *bundleFlags) check(config string, stderr io.Writer) error {
	switch {
	case (config == "") == (b.location == ""):
		fmt.Fprintln(stderr, "agentd serve: give one of --config and --bundle")
	case b.verificationKey != "" && b.location == "":
		fmt.Fprintln(stderr, "agentd serve: --verification-key goes with --bundle")
	case b.poll < 0:
		fmt.Fprintln(stderr, "agentd serve: --bundle-poll must not be negative")
	case b.keep < 1 || b.keep > reload.MaxKeep:
		fmt.Fprintf(stderr, "agentd serve: --keep-generations must be 1 to %d\n", reload.MaxKeep)
	default:
		return nil
	}
	return errUsage
}

// configSource is where the live generation comes from: a config directory (watched
// with --watch, reloaded on SIGHUP) or a bundle (polled every --bundle-poll, fetched
// on SIGHUP and when a request names a revision this replica does not hold).
type configSource struct {
	dir    *reload.Reloader
	bundle *bundle.Source
}

// openConfigSource loads the first generation into registry, from --config or
// --bundle; a config that does not load is an error (the daemon does not start).
func openConfigSource(ctx context.Context, f *serveFlags, registry *reload.Registry, opts config.Options, logger *slog.Logger, mp metric.MeterProvider) (*configSource, error) {
	if f.bundle.location == "" {
		r, err := reload.NewReloader(f.config, opts, registry, logger, mp, reloadOptions(f)...)
		if err != nil {
			return nil, err
		}
		if _, err := r.Reload(ctx); err != nil {
			return nil, fmt.Errorf("config %s does not compile:\n%s", f.config, registry.Status().Error)
		}
		return &configSource{dir: r}, nil
	}
	so := bundle.SourceOptions{Location: f.bundle.location, Poll: f.bundle.poll, Logger: logger, MeterProvider: mp}
	if f.bundle.verificationKey != "" {
		key, err := os.ReadFile(f.bundle.verificationKey)
		if err != nil {
			return nil, fmt.Errorf("--verification-key: %w", err)
		}
		if so.Open.Verification, err = bundle.VerificationKey(key, ""); err != nil {
			return nil, fmt.Errorf("--verification-key: %w", err)
		}
	}
	src, err := bundle.NewSource(so, registry, opts, reloadOptions(f)...)
	if err != nil {
		return nil, err
	}
	if err := src.Update(ctx); err != nil {
		_ = src.Close()
		return nil, fmt.Errorf("bundle %s does not load: %w", f.bundle.location, err)
	}
	go src.Run(ctx)
	return &configSource{bundle: src}, nil
}

// watched is the directory reloader to watch, nil for a bundle.
func (c *configSource) watched() []*reload.Reloader {
	if c.dir != nil {
		return []*reload.Reloader{c.dir}
	}
	return nil
}

// refresh reloads the directory or fetches the bundle again (SIGHUP).
func (c *configSource) refresh(ctx context.Context) {
	if c.dir != nil {
		_, _ = c.dir.Reload(ctx)
		return
	}
	_ = c.bundle.Update(ctx)
}

// statuses is the bundle's status keyed by its name, nil for a directory.
func (c *configSource) statuses() func() map[string]bundle.Status {
	if c.bundle == nil {
		return nil
	}
	return func() map[string]bundle.Status { return map[string]bundle.Status{c.bundle.Name(): c.bundle.Status()} }
}

// close removes a bundle's extracted files.
func (c *configSource) close() {
	if c.bundle != nil {
		_ = c.bundle.Close()
	}
}
