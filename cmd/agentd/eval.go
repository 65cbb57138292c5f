package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/agentd-dev/agentd/cmd/agentd/internal/server"
	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/config/reload"
	"github.com/agentd-dev/agentd/engine/store"
)

// evalRoutes maps --stage to the API route whose body --input holds.
var evalRoutes = map[string]string{
	"before_planning": "/v1/hooks/before_planning",
	"after_planning":  "/v1/hooks/after_planning",
	"after_execution": "/v1/hooks/after_execution",
	"after_synthesis": "/v1/hooks/after_synthesis",
	"operation":       "/v1/operations/check",
}

// runEval compiles the config, runs one stage call in process exactly as the HTTP API
// would, and prints the answer body. Exit 0 for a 2xx answer, 1 otherwise (rejections,
// denials and invalid input included), 2 for usage errors.
func runEval(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("config", "", "config directory (required)")
	stage := fs.String("stage", "", "before_planning, after_planning, after_execution, after_synthesis or operation")
	input := fs.String("input", "", "file with the stage's API request body (JSON); - for stdin")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	route, ok := evalRoutes[*stage]
	if *dir == "" || *input == "" || !ok || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: agentd eval --config DIR --stage STAGE --input FILE")
		fs.PrintDefaults()
		return exitUsage
	}
	body, err := readInput(*input)
	if err != nil {
		fmt.Fprintf(stderr, "agentd eval: %v\n", err)
		return exitFailed
	}
	gen, err := config.Load(*dir, config.Options{})
	if err != nil {
		printLoadError(stderr, *dir, err)
		return exitFailed
	}
	registry := reload.NewRegistry(1)
	registry.Swap(gen)
	mem := store.NewMemory(store.MemoryOptions{})
	svc, err := server.New(server.Config{Registry: registry, States: mem, Records: mem})
	if err != nil {
		fmt.Fprintf(stderr, "agentd eval: %v\n", err)
		return exitFailed
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, route, bytes.NewReader(body))
	svc.Handler(server.HTTPOptions{}).ServeHTTP(rec, req)
	var pretty bytes.Buffer
	if json.Indent(&pretty, rec.Body.Bytes(), "", "  ") != nil {
		pretty.Reset()
		pretty.Write(rec.Body.Bytes())
	}
	fmt.Fprintf(stdout, "%s\n", bytes.TrimSpace(pretty.Bytes()))
	if rec.Code/100 != 2 {
		return exitFailed
	}
	return exitOK
}

func readInput(path string) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(os.Stdin)
	}
	return os.ReadFile(path)
}
