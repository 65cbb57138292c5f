package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd-dev/agentd/builtin"
	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/config/reload"
	"github.com/agentd-dev/agentd/engine/store"
	mcpgw "github.com/agentd-dev/agentd/gateway/mcp"
)

const mcpDoc = `
Serve the MCP gateway of a config directory over stdio, one session for one client
that spawns its servers: stdin and stdout carry the protocol, logs go to stderr. The
config is watched and reloaded as 'agentd serve' does; with --store redis://... the
session's record is in the store a daemon's records API reads. With
--decision-log-file or --decision-log-url every decision is a decision event, as
'agentd serve' writes it.`

// runMCP serves the MCP gateway of a config directory over stdio, one session for one
// client that spawns its servers: stdin and stdout carry the protocol, logs go to
// stderr. The config is watched and reloaded as `agentd serve` does; with --store
// redis://... the session's record is in the store a daemon's records API reads.
func runMCP(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("mcp", "agentd mcp --config DIR [flags]", mcpDoc, stderr)
	var f serveFlags
	fs.StringVar(&f.config, "config", "", "config directory (required)")
	fs.BoolVar(&f.watch, "watch", true, "reload when files in the config directory change")
	fs.DurationVar(&f.debounce, "debounce", 100*time.Millisecond, "quiet period before a reload")
	fs.StringVar(&f.store, "store", "memory", "where request states, cache entries and records live: memory, or redis://host:port/db")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	f.evidence.registerSinks(fs.FlagSet)
	if _, code, ok := fs.parse(args, stdout, 0, 0); !ok {
		return code
	}
	if f.evidence.check("mcp", stderr) != nil {
		return exitUsage
	}
	if f.config == "" {
		fmt.Fprintln(stderr, "agentd mcp: --config is required")
		fs.printUsage(stderr)
		return exitUsage
	}
	if f.store != "memory" && !strings.HasPrefix(f.store, "redis://") && !strings.HasPrefix(f.store, "rediss://") {
		fmt.Fprintf(stderr, "agentd mcp: unsupported --store %q (supported: memory, redis://host:port/db)\n", f.store)
		return exitUsage
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		fmt.Fprintf(stderr, "agentd mcp: bad --log-level: %v\n", err)
		return exitUsage
	}
	f.successRetention, f.errorRetention, f.maxRecords, f.drain = time.Hour, 24*time.Hour, store.DefaultMaxRecords, 30*time.Second
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))
	if err := serveMCP(ctx, &f, os.Stdin, stdout, logger); err != nil {
		logger.Error("agentd mcp stopped", "error", err.Error())
		return exitFailed
	}
	return exitOK
}

func serveMCP(ctx context.Context, f *serveFlags, stdin io.Reader, stdout io.Writer, logger *slog.Logger) error {
	tel, err := setupTelemetry(ctx) // traces by OTLP as serve's do; metrics are not served
	if err != nil {
		return err
	}
	defer tel.shutdown(context.WithoutCancel(ctx))
	stores, err := openStores(ctx, f, logger)
	if err != nil {
		return err
	}
	defer stores.close()
	registry := reload.NewRegistry(8)
	reloader, err := reload.NewReloader(f.config, config.Options{
		Services: builtin.Services{Cache: stores.cache, Limiter: stores.limiter, Logger: logger}, Logger: logger,
		TracerProvider: tel.tracer,
	}, registry, logger, nil)
	if err != nil {
		return err
	}
	if _, err := reloader.Reload(ctx); err != nil {
		return fmt.Errorf("config %s does not compile:\n%s", f.config, registry.Status().Error)
	}
	if f.watch {
		go func() {
			if err := reload.Watch(ctx, reloader, reload.WatchOptions{Debounce: f.debounce}); err != nil {
				logger.Error("config watch stopped", "error", err.Error())
			}
		}()
	}
	dlog, err := openDecisionLog(&f.evidence, false, registry, logger, logOutput{level: slog.LevelWarn}, nil)
	if err != nil {
		return err
	}
	defer closeDecisionLog(ctx, dlog, f.drain, logger)
	driver, err := hostDriver(registry, stores.states, stores.records, 0, decisionObserver(dlog))
	if err != nil {
		return err
	}
	gateway, stop, err := startMCPGateway(ctx, mcpgw.Config{Driver: driver, Generations: registry, Logger: logger, TracerProvider: tel.tracer})
	if err != nil {
		return err
	}
	defer stop()
	startCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	gateway.WaitStarted(startCtx)
	cancel()
	logger.Info("agentd mcp serving on stdio", "config", f.config, "generation", registry.Current().ID)
	return gateway.Serve(ctx, &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}})
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// startMCPGateway starts an MCP gateway of cfg (its Version set here) following the
// live generation of cfg.Generations. Its upstreams outlive ctx (a draining daemon
// still forwards in-flight calls) until stop, which returns once they are down.
func startMCPGateway(ctx context.Context, cfg mcpgw.Config) (*mcpgw.Gateway, func(), error) {
	cfg.Version = buildVersion()
	gateway, err := mcpgw.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		gateway.Run(runCtx)
		close(done)
	}()
	return gateway, func() {
		cancel()
		<-done
	}, nil
}
