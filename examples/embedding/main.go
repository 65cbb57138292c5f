// Command embedding is agentd embedded in a Go program of its own: one engine and one
// config directory behind the stage API (package server) and the OpenAI-compatible
// gateway (package gateway/openai), both mounted in the program's own http.ServeMux
// beside a route of its own. main_test.go talks to it with api/client and the
// official openai-go client.
//
//	go run ./examples/embedding -config examples/openai-gateway [-addr 127.0.0.1:8090]
//
// The host builds what agentd serve builds: the live generation's registry, the
// stores, and the one engine.Driver every transport runs on.
package main

import (
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"os"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/config/reload"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/store"
	"github.com/agentd-dev/agentd/gateway/openai"
	"github.com/agentd-dev/agentd/server"
)

func main() {
	dir := flag.String("config", "examples/openai-gateway", "the config directory")
	addr := flag.String("addr", "127.0.0.1:8090", "listen address")
	flag.Parse()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	h, err := newHandler(*dir, logger)
	if err != nil {
		log.Fatal(err)
	}
	logger.Info("embedding example listening", "addr", *addr, "config", *dir)
	log.Fatal(http.ListenAndServe(*addr, h))
}

// newHandler loads dir and serves it: the stage API under /v1/, the OpenAI gateway
// under its own patterns (more specific, so the mux prefers them), and the host's own
// GET /hello. Requests live in an in-process store.
func newHandler(dir string, logger *slog.Logger) (http.Handler, error) {
	gen, err := config.Load(dir, config.Options{})
	if err != nil {
		return nil, err
	}
	registry := reload.NewRegistry(2)
	registry.Swap(gen)
	mem := store.NewMemory(store.MemoryOptions{})
	metrics, err := server.NewMetrics(nil, logger)
	if err != nil {
		return nil, err
	}
	driver, err := engine.NewDriver(engine.DriverConfig{
		Generations: registry, States: mem, Records: mem, Observer: metrics,
		KeepPlans: true, // every transport only reads the driver's answers
	})
	if err != nil {
		return nil, err
	}
	svc, err := server.New(server.Config{Registry: registry, Driver: driver, Records: mem, Logger: logger})
	if err != nil {
		return nil, err
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
	return mux, nil
}
