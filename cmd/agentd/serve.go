package main

import (
	"context"
	"fmt"
	"io"
)

func runServe(_ context.Context, _ []string, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "agentd serve: not built yet")
	return exitFailed
}
