// Package cputime reads the CPU time of the running process, for benchmarks that charge
// it to what ran between two readings.
package cputime

import (
	"syscall"
	"testing"
	"time"
)

// Process returns the CPU time the process has used so far, user and system, summed
// over every thread (the garbage collector's and every goroutine's alike). A failed
// read fails tb.
func Process(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
