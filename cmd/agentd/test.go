package main

import (
	"context"
	"io"

	"github.com/agentd-dev/agentd/config/hooktest"
)

func runTest(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	dir, gen, code := loadDirArg("test", args, stderr)
	if gen == nil {
		return code
	}
	report, err := hooktest.Run(ctx, dir, gen, hooktest.Options{})
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
