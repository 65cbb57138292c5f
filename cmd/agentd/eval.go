package main

import (
	"context"
	"fmt"
	"io"
)

func runEval(_ context.Context, _ []string, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "agentd eval: not built yet")
	return exitFailed
}
