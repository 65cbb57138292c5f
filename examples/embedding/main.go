// Command embedding is agentd embedded in a Go program of its own: one engine and one
// config directory behind the stage API (package server) and the OpenAI-compatible
// gateway (package gateway/openai), both mounted in the program's own http.ServeMux
// beside a route of its own. main_test.go talks to it with api/client and the
// official openai-go client.
//
//	go run ./examples/embedding -config examples/openai-gateway [-addr 127.0.0.1:8090] [-decision-log FILE]
//
// The host builds what agentd serve builds: the live generation's registry, the
// stores, the decision log (package decisionlog: one event per decision of every
// transport, masked by the config's decision_log section) and the one engine.Driver
// every transport runs on, with the stage metrics and the decision log as its
// observers.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/config/reload"
	"github.com/agentd-dev/agentd/decisionlog"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/store"
	"github.com/agentd-dev/agentd/gateway/openai"
	"github.com/agentd-dev/agentd/server"
)

func main() {
	dir := flag.String("config", "examples/openai-gateway", "the config directory")
	addr := flag.String("addr", "127.0.0.1:8090", "listen address")
	decisions := flag.String("decision-log", "agentd-decisions.log", "the file decision events are appended to, as JSON lines")
	flag.Parse()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	h, dlog, err := newHandler(*dir, *decisions, logger)
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := &http.Server{Addr: *addr, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Shutdown(context.Background())
	}()
	logger.Info("embedding example listening", "addr", *addr, "config", *dir, "decision_log", *decisions)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
	// The calls have ended: write out the decision events still queued.
	if err := dlog.Close(context.Background()); err != nil {
		log.Fatal(err)
	}
}

// newHandler loads dir and serves it: the stage API under /v1/, the OpenAI gateway
// under its own patterns (more specific, so the mux prefers them), and the host's own
// GET /hello. Requests live in an in-process store; every decision of either
// transport is an event appended to decisions, by the decision log it returns (whose
// Close writes out what it holds).
func newHandler(dir, decisions string, logger *slog.Logger) (http.Handler, *decisionlog.Logger, error) {
	gen, err := config.Load(dir, config.Options{})
	if err != nil {
		return nil, nil, err
	}
	registry := reload.NewRegistry(2)
	registry.Swap(gen)
	mem := store.NewMemory(store.MemoryOptions{})
	metrics, err := server.NewMetrics(nil, logger)
	if err != nil {
		return nil, nil, err
	}
	file, err := decisionlog.NewFileSink(decisionlog.FileOptions{Path: decisions})
	if err != nil {
		return nil, nil, err
	}
	dlog, err := decisionlog.New(decisionlog.Options{Sinks: []decisionlog.Sink{file}, Logger: logger,
		Rules: decisionlog.RulesOf(registry)})
	if err != nil {
		return nil, nil, err
	}
	driver, err := engine.NewDriver(engine.DriverConfig{
		Generations: registry, States: mem, Records: mem, Observer: engine.Observers(metrics, dlog),
		KeepPlans: true, // every transport only reads the driver's answers
	})
	if err != nil {
		return nil, nil, err
	}
	svc, err := server.New(server.Config{Registry: registry, Driver: driver, Records: mem, Logger: logger})
	if err != nil {
		return nil, nil, err
	}
	gateway := openai.New(openai.Config{Registry: registry, Driver: driver, Logger: logger})

	mux := http.NewServeMux()
	mux.Handle("/v1/", svc.Handler(server.HTTPOptions{}))
	for _, pattern := range openai.Patterns {
		mux.Handle(pattern, gateway)
	}
	mux.HandleFunc("GET /hello", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "hello from the host; agentd runs generation %s\n", registry.Current().ID)
	})
	return mux, dlog, nil
}
