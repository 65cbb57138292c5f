package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentd-dev/agentd/builtin"
	"github.com/agentd-dev/agentd/cmd/agentd/internal/approvalhook"
	"github.com/agentd-dev/agentd/cmd/agentd/internal/connlimit"
	"github.com/agentd-dev/agentd/cmd/agentd/internal/gcheadroom"
	"github.com/agentd-dev/agentd/cmd/agentd/internal/viewer"
	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/config/reload"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/store"
	boltstore "github.com/agentd-dev/agentd/engine/store/bolt"
	redisstore "github.com/agentd-dev/agentd/engine/store/redis"
	gwopenai "github.com/agentd-dev/agentd/gateway/openai"
	"github.com/agentd-dev/agentd/server"
)

type serveFlags struct {
	config, addr, tokenFile, tlsCert, tlsKey, store, logLevel, traceURL string
	watch, logPayloads, allowNoPlanReview                               bool
	debounce, successRetention, errorRetention, drain                   time.Duration
	readHeaderTimeout, readTimeout, writeTimeout, idleTimeout           time.Duration
	maxBody, memoryBytes, gcHeadroom                                    int64
	maxRecords, maxFailedRecords, maxRecordEntries, maxConns            int
	evidence                                                            evidenceFlags

	// dataDir and dataBytes are the bolt store's directory and byte budget, dataSync
	// and dataSyncEvery its durability mode and its interval's fsync period.
	dataDir       string
	dataBytes     int64
	dataSync      string
	dataSyncEvery time.Duration
	bundle        bundleFlags
	boundary      boundaryFlags
}

const serveDoc = `
Run the HTTP API (docs/openapi.yaml) on a config directory: the stage calls, operation
checks, execution records, /v1/status, /healthz, /readyz and /metrics, and the
gateways the config declares. The directory is compiled into a generation and, with
--watch, recompiled and swapped in on every save; a config that fails to compile keeps
the last good generation serving and shows its errors in /v1/status. With --bundle
the config is a bundle (agentd build), a file or a URL polled every --bundle-poll; its
revision is the generation's id, and a bundle that does not verify or compile never
goes live.`

// errHelp marks a --help the command has answered.
var errHelp = errors.New("help")

func parseServeFlags(args []string, stdout, stderr io.Writer) (*serveFlags, error) {
	var f serveFlags
	fs := newFlags("serve", "agentd serve --config DIR | --bundle FILE|URL [flags]", serveDoc, stderr)
	fs.StringVar(&f.config, "config", "", "config directory (or --bundle)")
	fs.StringVar(&f.addr, "addr", "127.0.0.1:8181", "listen address")
	fs.BoolVar(&f.watch, "watch", true, "reload when files in the config directory change")
	fs.DurationVar(&f.debounce, "debounce", 100*time.Millisecond, "quiet period before a reload")
	fs.StringVar(&f.tokenFile, "token-file", "", "file of the bearer tokens every route but /healthz and /readyz requires: one bare token (admin), or a YAML list of {token or token_sha256, role, tenant}")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "TLS certificate file (with --tls-key)")
	fs.StringVar(&f.tlsKey, "tls-key", "", "TLS key file (with --tls-cert)")
	fs.StringVar(&f.store, "store", "bolt", "where request states, cache entries, rate limits and records live: bolt, a file and its journal under --data-dir kept across restarts (every write in the journal before its call is answered; see --data-sync); memory, in the process; or redis://host:port/db[?prefix=agentd:&timeout=1s&cache_timeout=250ms] shared by replicas")
	fs.StringVar(&f.dataDir, "data-dir", ".agentd", "directory of the bolt store's file ("+boltstore.FileName+"); one daemon uses it at a time")
	fs.StringVar(&f.dataSync, "data-sync", string(boltstore.SyncInterval), "when the bolt store fsyncs its journal: interval, every --data-sync-interval (a crash or SIGKILL loses no answered write, a power loss the last interval's at most); always, every commit before its calls are answered (a power loss loses none either; about 3-4x the memory store's CPU per stage call); none, never while running (the kernel writes back when it will)")
	fs.DurationVar(&f.dataSyncEvery, "data-sync-interval", boltstore.DefaultSyncEvery, "how often --data-sync interval fsyncs the bolt store's file")
	fs.DurationVar(&f.successRetention, "record-retention", time.Hour, "how long records of successful requests are kept")
	fs.DurationVar(&f.errorRetention, "error-record-retention", 24*time.Hour, "how long records of failed requests are kept")
	fs.Int64Var(&f.maxBody, "max-body", 1<<20, "request body size limit in bytes")
	fs.DurationVar(&f.readHeaderTimeout, "read-header-timeout", 10*time.Second, "how long a client may take to send a request's headers")
	fs.DurationVar(&f.readTimeout, "read-timeout", 30*time.Second, "how long a client may take to send a request's body")
	fs.DurationVar(&f.writeTimeout, "write-timeout", time.Minute, "how long a response may take; on a streaming route, each write of it")
	fs.DurationVar(&f.idleTimeout, "idle-timeout", 2*time.Minute, "how long an idle keep-alive connection stays open")
	fs.IntVar(&f.maxConns, "max-connections", 4096, "connections open at once at most (keep it below the open-file limit); more wait to be accepted")
	fs.Int64Var(&f.memoryBytes, "memory-bytes", store.DefaultMaxBytes, "bytes the memory store's request states and records may hold, half each (the oldest written go first)")
	fs.Int64Var(&f.dataBytes, "data-bytes", store.DefaultMaxBytes, "bytes the bolt store's request states and records may take in its file, half each (the oldest written go first)")
	fs.Int64Var(&f.gcHeadroom, "gc-headroom", -1, "bytes the heap may grow past its live data before the next garbage collection, at least (Go's default lets it grow by the live heap's size): fewer collections while the live heap is smaller, at most this much more memory; -1: a quarter of --memory-bytes; 0: Go's default; a GOGC environment variable overrides it")
	fs.IntVar(&f.maxRecordEntries, "max-record-entries", engine.DefaultMaxRecordEntries, "entries (hook invocations, operation checks, plan rejections) one execution record may hold; a call past it answers 413 request_too_large")
	fs.IntVar(&f.maxRecords, "max-records", store.DefaultMaxRecords, "execution records the memory and bolt stores keep at most (the oldest written go first)")
	fs.IntVar(&f.maxFailedRecords, "max-failed-records", store.DefaultMaxRecords, "records of failed requests the memory and bolt stores keep at most, apart from --max-records")
	fs.BoolVar(&f.allowNoPlanReview, "allow-no-plan-review", false, "serve config generations without an enforcing required after_planning hook (refused by default, at start and on reload)")
	fs.StringVar(&f.traceURL, "trace-url", "", "the records viewer's trace link of each hook invocation, a URL template with {trace_id}, {span_id}, {span_name}, {hook}, {stage} or {request_id}, e.g. http://jaeger:16686/trace/{trace_id}")
	fs.BoolVar(&f.logPayloads, "log-payloads", false, "include request text, metadata and responses in logs")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.DurationVar(&f.drain, "drain-timeout", 30*time.Second, "how long SIGTERM waits for in-flight calls")
	f.evidence.register(fs.FlagSet)
	f.bundle.register(fs.FlagSet)
	f.boundary.register(fs.FlagSet)
	if _, code, ok := fs.parse(args, stdout, 0, 0); !ok {
		if code == exitOK {
			return nil, errHelp
		}
		return nil, errUsage
	}
	if err := f.evidence.check("serve", stderr); err != nil {
		return nil, err
	}
	if err := f.boundary.check(stderr); err != nil {
		return nil, err
	}
	_, syncErr := boltstore.ParseSync(f.dataSync)
	if err := f.bundle.check(f.config, stderr); err != nil {
		fs.printUsage(stderr)
		return nil, err
	}
	switch {
	case (f.tlsCert == "") != (f.tlsKey == ""):
		fmt.Fprintln(stderr, "agentd serve: --tls-cert and --tls-key go together")
		return nil, errUsage
	case f.traceURL != "" && viewer.CheckTraceURL(f.traceURL) != nil:
		fmt.Fprintf(stderr, "agentd serve: --trace-url: %v\n", viewer.CheckTraceURL(f.traceURL))
		return nil, errUsage
	case f.store != "bolt" && f.store != "memory" && !strings.HasPrefix(f.store, "redis://") && !strings.HasPrefix(f.store, "rediss://"):
		fmt.Fprintf(stderr, "agentd serve: unsupported --store %q (supported: bolt, memory, redis://host:port/db)\n", f.store)
		return nil, errUsage
	case f.store == "bolt" && f.dataDir == "":
		fmt.Fprintln(stderr, "agentd serve: --store bolt needs a --data-dir")
		return nil, errUsage
	case f.store == "bolt" && syncErr != nil:
		fmt.Fprintf(stderr, "agentd serve: --data-sync: %v\n", syncErr)
		return nil, errUsage
	case f.dataSyncEvery <= 0:
		fmt.Fprintln(stderr, "agentd serve: --data-sync-interval must be positive")
		return nil, errUsage
	case f.gcHeadroom < -1:
		fmt.Fprintln(stderr, "agentd serve: --gc-headroom must be -1, 0 or a number of bytes")
		return nil, errUsage
	case f.maxConns <= 0:
		fmt.Fprintln(stderr, "agentd serve: --max-connections must be positive")
		return nil, errUsage
	case f.readHeaderTimeout <= 0 || f.readTimeout <= 0 || f.writeTimeout <= 0 || f.idleTimeout <= 0:
		fmt.Fprintln(stderr, "agentd serve: --read-header-timeout, --read-timeout, --write-timeout and --idle-timeout must be positive")
		return nil, errUsage
	}
	return &f, nil
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f, err := parseServeFlags(args, stdout, stderr)
	if errors.Is(err, errHelp) {
		return exitOK
	}
	if err != nil {
		return exitUsage
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		fmt.Fprintf(stderr, "agentd serve: bad --log-level: %v\n", err)
		return exitUsage
	}
	out := logOutput{w: &lockedWriter{w: stderr}, level: level}
	logger := slog.New(slog.NewJSONHandler(out.w, &slog.HandlerOptions{Level: level}))
	if err := serve(ctx, f, logger, out); err != nil {
		logger.Error("agentd stopped", "error", err.Error())
		return exitFailed
	}
	return exitOK
}

// logOutput is where the daemon's JSON log goes: a writer its writers share (the
// logger's handler, and the decision log's sink, which writes in batches) and the level.
type logOutput struct {
	w     io.Writer
	level slog.Level
}

// lockedWriter serializes the writes of the handlers that share w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func serve(ctx context.Context, f *serveFlags, logger *slog.Logger, out logOutput) error {
	gc := gcheadroom.Start(gcHeadroom(f))
	defer gc.Stop()
	tokens, err := readTokens(f.tokenFile)
	if err != nil {
		return err
	}
	tel, err := setupTelemetry(ctx)
	if err != nil {
		return err
	}
	defer tel.shutdown(context.WithoutCancel(ctx))

	stores, err := openStores(ctx, f, logger)
	if err != nil {
		return err
	}
	defer stores.close()
	registry := reload.NewRegistry(f.bundle.keep)
	source, err := openConfigSource(ctx, f, registry, config.Options{
		Services:       builtin.Services{Cache: stores.cache, Limiter: stores.limiter, Logger: logger},
		TracerProvider: tel.tracer, SpanPayloads: f.logPayloads, MeterProvider: tel.meter, Logger: logger,
	}, logger, tel.meter)
	if err != nil {
		return err
	}
	defer source.close()
	dlog, err := openDecisionLog(&f.evidence, f.logPayloads, registry, logger, out, tel.meter)
	if err != nil {
		return err
	}
	defer closeDecisionLog(ctx, dlog, f.drain, logger)
	observers := []engine.Observer{decisionObserver(dlog)}
	announcer := approvalhook.New(func() *config.ApprovalNotify {
		if g := registry.Current(); g != nil {
			return g.ApprovalNotify
		}
		return nil
	}, approvalhook.Options{Logger: logger})
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.drain)
		defer cancel()
		_ = announcer.Close(ctx)
	}()
	observers = append(observers, announcer)
	reloaders := source.watched()
	refreshes := []func(context.Context){source.refresh}
	var shadowStatus func(context.Context) any
	if f.evidence.shadow != "" {
		sh, err := openShadow(ctx, f, registry, dlog, logger, tel.meter)
		if err != nil {
			return err
		}
		defer sh.Close()
		observers, reloaders, shadowStatus = append(observers, sh), append(reloaders, sh.Reloader()), sh.StatusFor
		refreshes = append(refreshes, func(ctx context.Context) { _, _ = sh.Reloader().Reload(ctx) })
	}
	metrics, err := server.NewMetrics(tel.meter, logger)
	if err != nil {
		return err
	}
	// The host builds the driver every transport runs on: the stage API, both
	// gateways, and the observers (metrics first) see the same calls.
	driver, err := hostDriver(registry, stores.states, stores.records, f.maxRecordEntries, append([]engine.Observer{metrics}, observers...)...)
	if err != nil {
		return err
	}
	svc, err := server.New(server.Config{
		Registry: registry, Driver: driver, Records: stores.records,
		Logger: logger, LogPayloads: f.logPayloads, Shadow: shadowStatus, Store: stores.kind, Bundles: source.statuses(),
	})
	if err != nil {
		return err
	}
	if f.watch {
		for _, r := range reloaders {
			go func() {
				if err := reload.Watch(ctx, r, reload.WatchOptions{Debounce: f.debounce}); err != nil {
					logger.Error("config watch stopped", "error", err.Error())
				}
			}()
		}
	}
	go reloadOnHangup(ctx, refreshes...)
	mcpConfig := f.mcpConfig(driver, registry, logger)
	mcpConfig.TracerProvider = tel.tracer
	mcpGateway, stopMCP, err := startMCPGateway(ctx, mcpConfig)
	if err != nil {
		return err
	}
	defer stopMCP()

	tcp, err := net.Listen("tcp", f.addr)
	if err != nil {
		return err
	}
	ln := connlimit.New(tcp, f.maxConns)
	gateway := gwopenai.New(gwopenai.Config{Registry: registry, Driver: driver, Logger: logger, MaxBody: f.maxBody, TracerProvider: tel.tracer})
	srv := &http.Server{
		Handler: svc.Handler(server.HTTPOptions{
			Tokens: tokens, MaxBody: f.maxBody, Metrics: tel.metrics,
			Timeouts: server.Timeouts{Read: f.readTimeout, Write: f.writeTimeout},
			Mounts: append(append(openAIMounts(gateway),
				server.Mount{Pattern: "/mcp", Handler: mcpGateway.Handler(), Role: server.RoleOrchestrator, Stream: true}),
				viewer.Mounts(viewer.Options{Service: svc, TraceURL: f.traceURL})...),
			Gateways:     map[string]func(context.Context) any{"mcp": func(ctx context.Context) any { return mcpGateway.Status(ctx) }},
			LoginPage:    viewer.LoginPage,
			AllowedHosts: f.boundary.hosts(),
		}),
		ReadHeaderTimeout: f.readHeaderTimeout,
		IdleTimeout:       f.idleTimeout,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	if len(tokens) == 0 && !loopback(ln.Addr()) {
		logger.Warn("no --token-file: every route is open to anyone who reaches this non-loopback address", "addr", ln.Addr().String())
	}
	errc := make(chan error, 1)
	go func() {
		logger.Info("agentd listening", "addr", ln.Addr().String(), "config", f.config, "bundle", f.bundle.location,
			"generation", registry.Current().ID, "tls", f.tlsCert != "", "watch", f.watch,
			"tokens", len(tokens), "max_connections", f.maxConns, "gc_headroom", gc.Headroom())
		if f.tlsCert != "" {
			errc <- srv.ServeTLS(ln, f.tlsCert, f.tlsKey)
		} else {
			errc <- srv.Serve(ln)
		}
	}()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	logger.Info("draining in-flight calls", "timeout", f.drain.String())
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.drain)
	defer cancel()
	go mcpGateway.Shutdown(sctx) // MCP sessions hold event streams open; they end once their calls have
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	logger.Info("agentd stopped")
	return nil
}

// hostDriver builds the driver a host's transports run on, the one construction
// serve, mcp and eval share: gens' generations over the stores, at most maxEntries
// entries a record (0: the engine's default), observers told of every call in their
// order (a nil one is skipped; serve's are the stage metrics, the decision log, the
// shadow configuration). Plans are kept as handed in: the handlers decode every plan
// anew, the gateways build theirs, and all only read answers.
func hostDriver(gens engine.Generations, states engine.StateStore, records engine.RecordStore, maxEntries int, observers ...engine.Observer) (*engine.Driver, error) {
	return engine.NewDriver(engine.DriverConfig{
		Generations: gens, States: states, Records: records, MaxRecordEntries: maxEntries,
		Observer: engine.Observers(observers...), KeepPlans: true,
	})
}

// gcHeadroom is the floor --gc-headroom asks for: by default a quarter of the memory
// store's budget (as the store reads --memory-bytes: 0 or less is its default),
// memory the operator has granted the daemon already.
func gcHeadroom(f *serveFlags) uint64 {
	if f.gcHeadroom < 0 {
		return uint64(cmp.Or(max(f.memoryBytes, 0), store.DefaultMaxBytes) / 4)
	}
	return uint64(f.gcHeadroom)
}

// reloadOptions are the reload policies the flags ask for.
func reloadOptions(f *serveFlags) []reload.Option {
	if f.allowNoPlanReview {
		return nil
	}
	return []reload.Option{reload.RequirePlanReview()}
}

// stores are the state and record stores the daemon runs on.
type stores struct {
	states  engine.StateStore
	cache   store.Cache
	limiter store.Limiter
	records store.QueryableRecords
	// kind is bolt, memory or redis.
	kind  string
	close func()
}

// openStores opens the --store backend: one bbolt file under --data-dir (the
// default), in-process memory, or Redis shared by replicas. Redis need not be up: the
// daemon serves, calls that need state answer 503 store_unavailable, and the store
// reconnects by itself when Redis returns.
func openStores(ctx context.Context, f *serveFlags, logger *slog.Logger) (*stores, error) {
	retention := store.Retention{Success: f.successRetention, Error: f.errorRetention, MaxRecords: f.maxRecords}
	switch f.store {
	case "memory":
		mem := store.NewMemory(store.MemoryOptions{Retention: retention, MaxFailedRecords: f.maxFailedRecords, MaxBytes: f.memoryBytes})
		return &stores{states: mem, cache: mem, limiter: mem, records: mem, kind: "memory", close: func() {}}, nil
	case "bolt":
		bs, err := boltstore.Open(f.dataDir, boltstore.Options{Retention: retention, MaxFailedRecords: f.maxFailedRecords, MaxBytes: f.dataBytes,
			Sync: boltstore.Sync(f.dataSync), SyncEvery: f.dataSyncEvery})
		if err != nil {
			return nil, fmt.Errorf("--data-dir: %w", err)
		}
		logger.Info("bolt store open", "path", bs.Path(), "sync", f.dataSync)
		return &stores{states: bs, cache: bs, limiter: bs, records: bs, kind: "bolt", close: func() {
			if err := bs.Close(); err != nil {
				logger.Error("closing the bolt store", "error", err.Error())
			}
		}}, nil
	}
	redisstore.SetLogger(logger)
	rs, err := redisstore.Open(f.store)
	if err != nil {
		return nil, fmt.Errorf("--store: %w", err)
	}
	if err := rs.Ping(ctx); err != nil {
		logger.Warn("redis store not reachable yet; calls that need state answer 503 until it is", "error", err.Error())
	}
	return &stores{states: rs, cache: rs, limiter: rs, records: rs.Records(retention), kind: "redis", close: func() { _ = rs.Close() }}, nil
}

// reloadOnHangup runs every refresh (a reload, a bundle fetch) on every SIGHUP until
// ctx is done.
func reloadOnHangup(ctx context.Context, refreshes ...func(context.Context)) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			for _, refresh := range refreshes {
				refresh(ctx)
			}
		}
	}
}

// readTokens reads the --token-file (see server.ParseTokenFile); no file is no tokens.
func readTokens(path string) ([]server.Token, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read token file: %w", err)
	}
	return server.ParseTokenFile(path, data)
}

// loopback reports whether addr is a loopback address, reachable from this host only.
func loopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// openAIMounts serves the OpenAI gateway under each of its patterns, to orchestrator
// tokens; the chat completion streams.
func openAIMounts(g *gwopenai.Gateway) []server.Mount {
	mounts := make([]server.Mount, len(gwopenai.Patterns))
	for i, p := range gwopenai.Patterns {
		mounts[i] = server.Mount{Pattern: p, Handler: g, Role: server.RoleOrchestrator, Stream: strings.HasPrefix(p, http.MethodPost+" ")}
	}
	return mounts
}
