package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/agentd-dev/agentd/cmd/agentd/internal/shadow"
	"github.com/agentd-dev/agentd/config/reload"
	"github.com/agentd-dev/agentd/decisionlog"
	"github.com/agentd-dev/agentd/engine"
)

// evidenceFlags configure the decision log's sinks and the shadow configuration.
type evidenceFlags struct {
	logDecisions            bool
	file                    string
	fileMaxBytes            int64
	fileKeep                int
	url, urlTokenEnv        string
	urlFormat, opaID        string
	urlBatch, urlBuffer     int
	urlInterval, urlTimeout time.Duration
	queue                   int
	shadow                  string
}

func (f *evidenceFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.logDecisions, "log-decisions", true, "write one JSON log line per decision (stage decision, operation check, shadow disagreement) at info level; payloads only with --log-payloads")
	f.registerSinks(fs)
	fs.StringVar(&f.shadow, "shadow", "", "a second config directory, loaded and watched like --config, that every stage call and check is evaluated against too, off the response path; disagreements are decision events, a metric and a /v1/status summary")
}

// registerSinks registers the flags of the decision log's file and HTTP sinks and of
// its queue: what serve and eval share.
func (f *evidenceFlags) registerSinks(fs *flag.FlagSet) {
	fs.StringVar(&f.file, "decision-log-file", "", "append decision events (masked payload included) as JSON lines to this file")
	fs.Int64Var(&f.fileMaxBytes, "decision-log-max-bytes", decisionlog.DefaultFileMaxBytes, "rotate the decision log file past this size")
	fs.IntVar(&f.fileKeep, "decision-log-keep", 5, "rotated decision log files kept (FILE.1 is the newest)")
	fs.StringVar(&f.url, "decision-log-url", "", "POST decision events (masked payload included) in batches, as a JSON array, to this http(s) URL")
	fs.StringVar(&f.urlFormat, "decision-log-format", "agentd", "what --decision-log-url takes: agentd (a JSON array of agentd's events) or opa (a gzipped JSON array of events in OPA's decision-log shape, for an OPA decision-log service)")
	fs.StringVar(&f.opaID, "decision-log-opa-id", "", "the id label of every event with --decision-log-format opa (default: the host name)")
	fs.StringVar(&f.urlTokenEnv, "decision-log-token-env", "", "environment variable holding a bearer token for --decision-log-url")
	fs.IntVar(&f.urlBatch, "decision-log-batch", 100, "most events one POST to --decision-log-url carries")
	fs.IntVar(&f.urlBuffer, "decision-log-buffer", 10_000, "events waiting for --decision-log-url at most; past it they are dropped and counted")
	fs.DurationVar(&f.urlInterval, "decision-log-interval", time.Second, "how long a partial batch waits before it is sent")
	fs.DurationVar(&f.urlTimeout, "decision-log-timeout", 5*time.Second, "how long one POST to --decision-log-url may take")
	fs.IntVar(&f.queue, "decision-log-queue", decisionlog.DefaultQueue, "decision events waiting to be written at most; past it they are dropped and counted")
}

// check reports a flag combination that cannot work, as the command cmd.
func (f *evidenceFlags) check(cmd string, stderr io.Writer) error {
	switch {
	case f.fileMaxBytes <= 0 || f.fileKeep < 0 || f.urlBatch <= 0 || f.urlBuffer <= 0 || f.queue <= 0:
		fmt.Fprintln(stderr, "agentd "+cmd+": --decision-log-max-bytes, -batch, -buffer and -queue must be positive, --decision-log-keep not negative")
		return errUsage
	case f.urlInterval <= 0 || f.urlTimeout <= 0:
		fmt.Fprintln(stderr, "agentd "+cmd+": --decision-log-interval and --decision-log-timeout must be positive")
		return errUsage
	case f.urlTokenEnv != "" && f.url == "":
		fmt.Fprintln(stderr, "agentd "+cmd+": --decision-log-token-env needs --decision-log-url")
		return errUsage
	case f.urlFormat != "agentd" && f.urlFormat != "opa":
		fmt.Fprintf(stderr, "agentd %s: unsupported --decision-log-format %q (supported: agentd, opa)\n", cmd, f.urlFormat)
		return errUsage
	case f.opaID != "" && f.urlFormat != "opa":
		fmt.Fprintln(stderr, "agentd "+cmd+": --decision-log-opa-id needs --decision-log-format opa")
		return errUsage
	}
	return nil
}

// openDecisionLog starts the decision log with the sinks f asks for; nil when it asks
// for none. Events are masked by the decision_log section of the generation their call
// ran on, found in registry. Decision lines go to out, as the host's own log lines,
// when f asks for them and out's level lets info lines through (payloads in them only
// with logPayloads): at a higher level there is no log sink, and no decision log at
// all when no other sink is asked for.
func openDecisionLog(f *evidenceFlags, logPayloads bool, registry *reload.Registry, logger *slog.Logger, out logOutput, mp metric.MeterProvider) (*decisionlog.Logger, error) {
	var sinks []decisionlog.Sink
	if f.logDecisions && out.level <= slog.LevelInfo {
		sinks = append(sinks, decisionlog.NewLogSink(out.w, out.level, logPayloads))
	}
	if f.file != "" {
		s, err := decisionlog.NewFileSink(decisionlog.FileOptions{Path: f.file, MaxBytes: f.fileMaxBytes, Keep: f.fileKeep})
		if err != nil {
			return nil, err
		}
		sinks = append(sinks, s)
	}
	if f.url != "" {
		s, err := httpSink(f)
		if err != nil {
			return nil, err
		}
		sinks = append(sinks, s)
	}
	if len(sinks) == 0 {
		return nil, nil
	}
	return decisionlog.New(decisionlog.Options{
		Sinks: sinks, Queue: f.queue, MeterProvider: mp, Logger: logger,
		Rules: decisionlog.RulesOf(registry),
	})
}

func httpSink(f *evidenceFlags) (decisionlog.Sink, error) {
	header := http.Header{}
	if f.urlTokenEnv != "" {
		token := os.Getenv(f.urlTokenEnv)
		if token == "" {
			return nil, fmt.Errorf("--decision-log-token-env: %s is not set", f.urlTokenEnv)
		}
		header.Set("Authorization", "Bearer "+token)
	}
	opts := decisionlog.HTTPOptions{
		URL: f.url, Header: header, BatchSize: f.urlBatch, Buffer: f.urlBuffer, Interval: f.urlInterval, Timeout: f.urlTimeout,
	}
	if f.urlFormat != "opa" {
		return decisionlog.NewHTTPSink(opts)
	}
	id := f.opaID
	if id == "" {
		host, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("--decision-log-format opa: no --decision-log-opa-id and no host name: %w", err)
		}
		id = host
	}
	return decisionlog.NewOPASink(decisionlog.OPAOptions{HTTPOptions: opts, Labels: map[string]string{"id": id, "version": buildVersion()}})
}

// decisionObserver is dl as one of a driver's observers: nil, which Observers skips,
// when there is no decision log.
func decisionObserver(dl *decisionlog.Logger) engine.Observer {
	if dl == nil {
		return nil
	}
	return dl
}

// closeDecisionLog writes out what the decision log holds, for at most timeout.
func closeDecisionLog(ctx context.Context, dl *decisionlog.Logger, timeout time.Duration, logger *slog.Logger) {
	if dl == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	if err := dl.Close(ctx); err != nil {
		logger.Warn("decision log closed with events undelivered", "error", err.Error())
	}
}

// openShadow loads the --shadow directory beside the live registry; its disagreements
// go to dlog when there is one.
func openShadow(ctx context.Context, f *serveFlags, live *reload.Registry, dlog *decisionlog.Logger, logger *slog.Logger, mp metric.MeterProvider) (*shadow.Shadow, error) {
	cfg := shadow.Config{Dir: f.evidence.shadow, Live: live, MeterProvider: mp, Logger: logger}
	if dlog != nil {
		cfg.Emit = dlog.Emit
	}
	return shadow.New(ctx, cfg)
}
