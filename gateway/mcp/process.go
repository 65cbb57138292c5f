package mcp

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"slices"
	"time"

	"github.com/agentd-dev/agentd/config"
)

// stopGrace is how long a stdio upstream has to exit after its stdin closed, and then
// after SIGTERM, before it is killed.
const stopGrace = 2 * time.Second

// process is a running stdio upstream: its stdin, its vetted stdout, and its exit.
type process struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	// exited is closed once the process has been reaped; err is its Wait error.
	exited chan struct{}
	err    error
}

// spawn starts the command of s in its own process group, with exactly its env and
// env_pass variables, its stderr logged line by line (as log says) and its stdout vetted (see
// vetLines). The pipes are the gateway's own, so reaping the process never cuts a
// read short.
func spawn(s *config.MCPServer, log lineLog) (*process, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return nil, err
	}
	cmd := exec.Command(s.Command[0], s.Command[1:]...)
	cmd.Dir, cmd.Env = s.Dir, environ(s)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	ownGroup(cmd)
	err = cmd.Start()
	closeAll(inR, outW, errW) // the child holds its ends now
	if err != nil {
		closeAll(inW, outR, errR)
		return nil, err
	}
	go logLines(errR, s.Name, log)
	p := &process{cmd: cmd, stdin: inW, stdout: vetLines(outR, s.Name, log), exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// environ is the environment of the command of s: its env, then the env_pass variables
// agentd has, sorted.
func environ(s *config.MCPServer) []string {
	env := make([]string, 0, len(s.Env)+len(s.EnvPass))
	for k, v := range s.Env {
		env = append(env, k+"="+v)
	}
	for _, k := range s.EnvPass {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	slices.Sort(env)
	return env
}

// stop ends the process: stdin is closed, then its group gets SIGTERM and at last
// SIGKILL, each after stopGrace. It returns once the process is reaped.
func (p *process) stop() {
	_ = p.stdin.Close()
	for _, sig := range []signal{sigTerm, sigKill} {
		select {
		case <-p.exited:
			return
		case <-time.After(stopGrace):
			signalGroup(p.cmd, sig)
		}
	}
	<-p.exited
}

// logLines logs each line of r as a line of the upstream's stderr, until r ends.
func logLines(r io.ReadCloser, server string, log lineLog) {
	defer r.Close()
	br := bufio.NewReader(r)
	for {
		line, err := readLine(br)
		if len(line) > 0 {
			log.logger.Info("MCP upstream stderr", log.attrs(server, line, nil)...)
		}
		if err != nil {
			return
		}
	}
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}
