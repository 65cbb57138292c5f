//go:build unix

package mcp

import (
	"os/exec"
	"syscall"
)

type signal = syscall.Signal

const (
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
)

// ownGroup starts the command in a process group of its own, so that signalGroup
// reaches the processes it starts too (npx starts node, say).
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup sends sig to the command's process group.
func signalGroup(cmd *exec.Cmd, sig signal) {
	_ = syscall.Kill(-cmd.Process.Pid, sig)
}
