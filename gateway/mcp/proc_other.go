//go:build !unix

package mcp

import (
	"os"
	"os/exec"
)

type signal int

const (
	sigTerm signal = iota
	sigKill
)

// ownGroup does nothing where process groups are not available.
func ownGroup(*exec.Cmd) {}

// signalGroup kills the command's process: without process groups there is no gentler
// signal to send, so SIGTERM waits for SIGKILL.
func signalGroup(cmd *exec.Cmd, sig signal) {
	if sig == sigKill {
		_ = cmd.Process.Signal(os.Kill)
	}
}
