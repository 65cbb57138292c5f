package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/agentd-dev/agentd/engine/decl"
	"github.com/agentd-dev/agentd/engine/hooktest"
)

func runTest(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, "usage: agentd test DIR") }
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		if err == nil {
			fs.Usage()
		}
		return exitUsage
	}
	dir := fs.Arg(0)
	gen, err := decl.Load(dir, decl.Options{})
	if err != nil {
		printLoadError(stderr, dir, err)
		return exitFailed
	}
	report, err := hooktest.Run(ctx, dir, gen)
	if err != nil {
		printLoadError(stderr, dir, err)
		return exitFailed
	}
	report.Print(stdout)
	if _, failed := report.Counts(); failed > 0 {
		return exitFailed
	}
	return exitOK
}
