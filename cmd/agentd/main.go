// Command agentd is the agentd daemon and CLI.
//
//	agentd serve   --config DIR [flags]   run the HTTP API (and the MCP gateway at /mcp) on a config directory
//	agentd mcp     --config DIR [flags]   serve the MCP gateway of a config directory over stdio
//	agentd check   [--strict] DIR         compile a config directory, print its summary and warnings
//	agentd build   [--signing-key KEY] --output B.tar.gz DIR   write a config directory as a (signed) OPA bundle
//	agentd test    [--coverage] DIR       run the Rego tests and pipeline cases of DIR
//	agentd eval    --config DIR --stage STAGE --input FILE [--explain]
//	agentd replay  --config CANDIDATE --records FILE|URL [--allow-changes] [--json]
//	agentd probe   [--seed N] [--json] DIR   attack the required plan policy with mutated plans
//	agentd opa     ARGS...                OPA's own command line at the pinned version
//	agentd init    [--example stock] DIR  write a new project of one's own (or an example)
//	agentd schema  DIR                    write the JSON Schemas for editors
//	agentd version
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentd-dev/agentd/engine/diag"
)

// Exit codes.
const (
	exitOK     = 0
	exitFailed = 1 // config errors, failed tests, a failed stage
	exitUsage  = 2
)

// errUsage marks a command-line mistake; the command has printed its usage.
var errUsage = errors.New("usage")

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

var commands = []command{
	{"serve", "run the HTTP API on a config directory", runServe},
	{"mcp", "serve the MCP gateway of a config directory over stdio", runMCP},
	{"check", "compile a config directory and print its summary and warnings", runCheck},
	{"build", "write a config directory as an OPA-format bundle, signed with --signing-key", runBuild},
	{"test", "run the Rego tests and pipeline cases of a config directory", runTest},
	{"eval", "run one stage on a JSON input and print the outcome", runEval},
	{"replay", "re-run recorded plans and checks against a candidate config and print what would change", runReplay},
	{"probe", "attack the required plan policy with mutated plans", runProbe},
	{"opa", "run OPA's own command line (opa test, eval, check, fmt) at the pinned version", runOPA},
	{"init", "write a new project of one's own (or an example) into a new directory", runInit},
	{"schema", "write the JSON Schemas of the config files into a directory, for editors", runSchema},
	{"version", "print the version of agentd, OPA and CEL", runVersion},
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	if args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if len(args) > 1 {
			return run(ctx, []string{args[1], "--help"}, stdout, stderr)
		}
		usage(stdout)
		return exitOK
	}
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	fmt.Fprintf(stderr, "agentd: unknown command %q%s\n", args[0], diag.DidYouMean(args[0], names))
	usage(stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: agentd <command> [flags]\n\ncommands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nagentd help <command> (or agentd <command> --help) describes a command and its flags.")
}
