// Package prof writes and summarizes the benchmark's pprof profiles: CPU and allocation
// profiles of an in-process operation, a profiling build of agentd (the plain binary
// plus a net/http/pprof listener, added with go build -overlay), and `go tool pprof
// -top` summaries of any profile.
package prof

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
)

// CPU profiles op, run back to back for d, into path. It returns how many operations
// ran.
func CPU(path string, d time.Duration, op func() error) (int, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		return 0, err
	}
	n, err := repeat(d, op)
	pprof.StopCPUProfile()
	return n, err
}

// Allocs writes the allocations of op, run back to back for d, as two heap profiles:
// path+".base" before and path after, to read with pprof -base.
func Allocs(path string, d time.Duration, op func() error) (int, error) {
	if err := writeHeap(path + ".base"); err != nil {
		return 0, err
	}
	n, err := repeat(d, op)
	if err != nil {
		return n, err
	}
	return n, writeHeap(path)
}

func writeHeap(path string) error {
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return pprof.Lookup("allocs").WriteTo(f, 0)
}

func repeat(d time.Duration, op func() error) (int, error) {
	n := 0
	for start := time.Now(); time.Since(start) < d; n++ {
		if err := op(); err != nil {
			return n, err
		}
	}
	return n, nil
}

// TopOptions select a `go tool pprof -top` view.
type TopOptions struct {
	Nodes       int
	Cum         bool   // sort by cumulative instead of flat
	SampleIndex string // e.g. alloc_space; empty for the profile's default
	Base        string // a profile to subtract
}

// Top runs `go tool pprof -top` on profile and returns its report without the header
// lines that name files and times.
func Top(goBin, profile string, o TopOptions) (string, error) {
	args := []string{"tool", "pprof", "-top", "-nodecount=" + strconv.Itoa(o.Nodes)}
	if o.Cum {
		args = append(args, "-cum")
	}
	if o.SampleIndex != "" {
		args = append(args, "-sample_index="+o.SampleIndex)
	}
	if o.Base != "" {
		args = append(args, "-base="+o.Base)
	}
	cmd := exec.Command(goBin, append(args, profile)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go tool pprof %s: %v: %s", profile, err, stderr.String())
	}
	var keep []string
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if strings.HasPrefix(line, "File:") || strings.HasPrefix(line, "Build ID:") || strings.HasPrefix(line, "Time:") {
			continue
		}
		keep = append(keep, line)
	}
	return strings.Join(keep, "\n"), nil
}

//go:embed testdata/agentd_pprof.go
var overlaySource []byte

// BuildAgentd builds repo's ./cmd/agentd into out with one file added to its package
// main by -overlay: a net/http/pprof listener on $AGENTD_BENCH_PPROF. Nothing in the
// repository changes; the file lives in this package's testdata.
func BuildAgentd(goBin, repo, out, tmp string) error {
	src := filepath.Join(tmp, "agentd_pprof.go")
	if err := os.WriteFile(src, overlaySource, 0o644); err != nil {
		return err
	}
	abs, err := filepath.Abs(repo)
	if err != nil {
		return err
	}
	overlay, err := json.Marshal(map[string]any{"Replace": map[string]string{
		filepath.Join(abs, "cmd", "agentd", "zz_bench_pprof.go"): src,
	}})
	if err != nil {
		return err
	}
	overlayFile := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(overlayFile, overlay, 0o644); err != nil {
		return err
	}
	cmd := exec.Command(goBin, "build", "-overlay", overlayFile, "-o", out, "./cmd/agentd")
	cmd.Dir = abs
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build -overlay ./cmd/agentd: %v\n%s", err, msg)
	}
	return nil
}
