// Package report renders the benchmark's markdown: the machine line, the commit, one
// table of every figure, and the profile summaries.
package report

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"time"
)

// Row is one line of the table. Ratio is agentd's figure over the peer's.
type Row struct {
	ID, Figure, Agentd, Peer, Ratio, Goal string
}

// Machine describes where the run happened.
type Machine struct {
	CPU            string
	Cores          int
	GOMAXPROCS     int
	Go             string
	OS             string
	OPA, CEL       string
	Commit         string
	UncommittedSrc bool
}

// ReadMachine reads the CPU model from /proc/cpuinfo, the core count, the Go and
// library versions of this binary, and the commit of the repository at repo.
func ReadMachine(repo string) Machine {
	m := Machine{CPU: "unknown", Cores: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), Go: runtime.Version(),
		OS: runtime.GOOS + "/" + runtime.GOARCH, OPA: "?", CEL: "?", Commit: "unknown"}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		processors := 0
		for sc.Scan() {
			name, value, _ := strings.Cut(sc.Text(), ":")
			switch strings.TrimSpace(name) {
			case "model name":
				if m.CPU == "unknown" {
					m.CPU = strings.TrimSpace(value)
				}
			case "processor":
				processors++
			}
		}
		f.Close()
		if processors > 0 {
			m.Cores = processors
		}
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			switch d.Path {
			case "github.com/open-policy-agent/opa":
				m.OPA = d.Version
			case "github.com/google/cel-go":
				m.CEL = d.Version
			}
		}
	}
	if out, err := git(repo, "rev-parse", "--short=12", "HEAD"); err == nil {
		m.Commit = out
	}
	if out, err := git(repo, "status", "--porcelain", "--untracked-files=no"); err == nil && out != "" {
		m.UncommittedSrc = true
	}
	return m
}

func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}

// Line renders the machine line.
func (m Machine) Line() string {
	return fmt.Sprintf("Machine: %s, %d cores (GOMAXPROCS %d), %s, %s; OPA %s, cel-go %s.",
		m.CPU, m.Cores, m.GOMAXPROCS, m.Go, m.OS, m.OPA, m.CEL)
}

// CommitLine renders the commit line.
func (m Machine) CommitLine() string {
	s := "Commit: " + m.Commit
	if m.UncommittedSrc {
		s += " (the working tree had uncommitted changes to tracked files; the figures are of that tree)"
	}
	return s + "."
}

// Table renders rows as a markdown table.
func Table(rows []Row) string {
	var b strings.Builder
	b.WriteString("| # | Figure | agentd | Peer | agentd ÷ peer | Goal |\n")
	b.WriteString("|---|---|---:|---:|---:|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", r.ID, r.Figure, r.Agentd, r.Peer, r.Ratio, r.Goal)
	}
	return b.String()
}

// Duration renders d with three significant digits in a unit that suits it.
func Duration(d time.Duration) string {
	return NS(float64(d.Nanoseconds()))
}

// NS renders a nanosecond count like Duration; a negative count with a minus sign.
func NS(ns float64) string {
	switch {
	case ns < 0:
		return "−" + NS(-ns)
	case ns >= 1e9:
		return sig(ns/1e9) + " s"
	case ns >= 1e6:
		return sig(ns/1e6) + " ms"
	case ns >= 1e3:
		return sig(ns/1e3) + " µs"
	default:
		return sig(ns) + " ns"
	}
}

// sig renders x with three significant digits.
func sig(x float64) string {
	switch {
	case x >= 100:
		return fmt.Sprintf("%.0f", x)
	case x >= 10:
		return fmt.Sprintf("%.1f", x)
	default:
		return fmt.Sprintf("%.2f", x)
	}
}

// Ratio renders a/b as "1.23×".
func Ratio(a, b float64) string {
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// Bytes renders a byte count in MiB.
func Bytes(n int64) string {
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// Count renders n with thousands separators.
func Count(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + Count(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// LoadAverage returns the 1, 5 and 15 minute load averages of /proc/loadavg.
func LoadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
