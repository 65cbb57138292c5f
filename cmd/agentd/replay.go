package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/agentd-dev/agentd/cmd/agentd/internal/replay"
	"github.com/agentd-dev/agentd/compare"
	"github.com/agentd-dev/agentd/config"
)

// sources is a repeatable string flag.
type sources []string

func (s *sources) String() string     { return strings.Join(*s, ",") }
func (s *sources) Set(v string) error { *s = append(*s, v); return nil }

const replayDoc = `
Re-run recorded requests' plan reviews and operation checks against a candidate config
directory, writing nothing, and print what would change: newly denied, newly allowed
and changed decisions, by request and decision id. --records takes execution records
(GET /v1/executions/{id} answers as a JSON list or JSON lines, or a page of GET
/v1/executions), a decision log file, - for stdin, or a daemon's URL, whose records
list is followed page by page. Records and events of another schema version are
skipped and named.

Exit 0: nothing would change (or --allow-changes); 1: a decision would change, or a
source cannot be read; 2: usage.`

// runReplay re-runs recorded plans and checks against a candidate config and prints
// what would change; exit 1 on any change unless --allow-changes.
func runReplay(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("replay", "agentd replay --config CANDIDATE --records FILE|URL [--records ...] [--allow-changes] [--json]", replayDoc, stderr)
	var records sources
	dir := fs.String("config", "", "the candidate config directory (required)")
	fs.Var(&records, "records", "execution records or decision events to replay (repeatable): a file (JSON, JSON lines, a page of GET /v1/executions; - for stdin) or a daemon's URL, whose records list is followed page by page")
	allow := fs.Bool("allow-changes", false, "exit 0 even when decisions would change")
	tokenEnv := fs.String("token-env", "AGENTD_TOKEN", "environment variable holding the bearer token for a --records URL")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if _, code, ok := fs.parse(args, stdout, 0, 0); !ok {
		return code
	}
	if *dir == "" || len(records) == 0 {
		fmt.Fprintln(stderr, "agentd replay: give --config and at least one --records")
		fs.printUsage(stderr)
		return exitUsage
	}
	gen, err := config.Load(*dir, config.Options{Services: compare.Services(slog.New(slog.DiscardHandler))})
	if err != nil {
		printLoadError(stderr, *dir, err)
		return exitFailed
	}
	set := &replay.Set{}
	for _, src := range records {
		got, err := readRecords(ctx, src, os.Getenv(*tokenEnv))
		if err != nil {
			fmt.Fprintf(stderr, "agentd replay: %s: %v\n", src, err)
			return exitFailed
		}
		set.Add(got)
	}
	res := replay.Run(ctx, gen, set)
	if *asJSON {
		_ = res.WriteJSON(stdout)
	} else {
		res.Print(stdout)
	}
	if res.Changed() && !*allow {
		return exitFailed
	}
	return exitOK
}

// readRecords reads one --records source: a daemon's URL, stdin (-) or a file.
func readRecords(ctx context.Context, src, token string) (*replay.Set, error) {
	if strings.HasPrefix(src, "http://") || strings.HasPrefix(src, "https://") {
		return replay.Fetch(ctx, &http.Client{Timeout: 30 * time.Second}, src, token)
	}
	if src == "-" {
		return replay.Read(os.Stdin)
	}
	f, err := os.Open(src)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return replay.Read(f)
}
