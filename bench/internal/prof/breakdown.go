package prof

import (
	"bytes"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
)

// Category is one bucket of a breakdown: a sample belongs to the first category, in
// order, that matches any frame of its stack.
type Category struct {
	Name    string
	Pattern *regexp.Regexp
}

// Categories split the samples of agentd's and OPA's request paths. Matching any frame
// (not the leaf) keeps OPA's deep, truncated evaluation stacks in the evaluation
// bucket; the order resolves nesting (a JSON decode inside the request handler is
// "request JSON decode", not "HTTP").
var Categories = []Category{
	{"policy evaluation (OPA topdown)", regexp.MustCompile(`open-policy-agent/opa/v1/topdown\.`)},
	{"OPA rego API around eval (txn, result → Go values)", regexp.MustCompile(`open-policy-agent/opa/v1/rego\.`)},
	{"decision memo (key: canonical projection of the read paths; lookup)", regexp.MustCompile(`agentd/engine/policy\.\(\*PlanMemo\)`)},
	{"input → Rego value", regexp.MustCompile(`agentd/engine/policy\.(PlanInput|CallInput)|opa/v1/ast\.InterfaceToValue`)},
	{"decision decode", regexp.MustCompile(`agentd/engine/policy\.decode`)},
	{"plan clone + validation", regexp.MustCompile(`agentd/engine\.(ClonePlan|ValidatePlan)`)},
	{"request JSON decode", regexp.MustCompile(`internal/server\.decodeBody|encoding/json\.\(\*Decoder\)|opa/v1/util\.(Unmarshal|NewJSONDecoder)`)},
	{"response JSON encode", regexp.MustCompile(`internal/server\.writeJSON|opa/v1/server/writer\.`)},
	{"CEL evaluation (cel-go)", regexp.MustCompile(`github\.com/google/cel-go/`)},
	{"agentd CEL wrapper (vars, result conversion)", regexp.MustCompile(`agentd/engine/expr\.`)},
	{"cache key hash + cache lookup", regexp.MustCompile(`agentd/builtin\.(cacheKey|\(\*cacheLookup\))`)},
	{"request state + execution records", regexp.MustCompile(`agentd/engine/(store|record)\.|internal/server\.\(\*Service\)\.(begin|commit|updateRecord)|internal/server\.newRecord`)},
	{"metrics, logs, trail", regexp.MustCompile(`go\.opentelemetry\.io/otel/sdk|log/slog\.|internal/server\.\(\*Service\)\.observe|opa/v1/metrics\.|opa/v1/logging|prometheus/client_golang/prometheus\.\(\*|agentd/engine\.\(\*Trail\)`)},
	{"other agentd engine (hook runner, context, spans)", regexp.MustCompile(`agentd-dev/agentd/`)},
	{"HTTP server + network syscalls", regexp.MustCompile(`net/http\.|internal/poll\.|syscall\.|^net\.|bufio\.`)},
	{"GC (background workers)", regexp.MustCompile(`runtime\.(gcBgMarkWorker|bgsweep|bgscavenge)`)},
}

// Share is one category's part of a profile.
type Share struct {
	Category string
	Value    float64 // nanoseconds for CPU profiles, counts or bytes otherwise
	Fraction float64
}

// Breakdown sorts every sample of profile (sampleIndex as for pprof, empty for the
// default; base, when set, a profile to subtract) into Categories, plus "other",
// using `go tool pprof -traces`.
func Breakdown(goBin, profile, sampleIndex, base string) ([]Share, error) {
	args := []string{"tool", "pprof", "-traces"}
	if sampleIndex != "" {
		args = append(args, "-sample_index="+sampleIndex)
	}
	if base != "" {
		args = append(args, "-base="+base)
	}
	cmd := exec.Command(goBin, append(args, profile)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go tool pprof -traces %s: %v: %s", profile, err, stderr.String())
	}
	sums := make([]float64, len(Categories)+1)
	var total float64
	for _, block := range strings.Split(string(out), "-----------+")[1:] {
		value, frames, ok := parseTrace(block)
		if !ok {
			continue
		}
		total += value
		sums[categorize(frames)] += value
	}
	if total == 0 {
		return nil, fmt.Errorf("%s: no samples", profile)
	}
	shares := make([]Share, 0, len(sums))
	for i, v := range sums {
		name := "other (scheduler, runtime)"
		if i < len(Categories) {
			name = Categories[i].Name
		}
		shares = append(shares, Share{Category: name, Value: v, Fraction: v / total})
	}
	return shares, nil
}

func categorize(frames []string) int {
	for i, c := range Categories {
		for _, f := range frames {
			if c.Pattern.MatchString(f) {
				return i
			}
		}
	}
	return len(Categories)
}

// parseTrace reads one block of pprof -traces: label lines ("bytes: 512B"), then
// "<value>   <leaf function>", then one caller per line.
func parseTrace(block string) (float64, []string, bool) {
	var frames []string
	value := -1.0
	for _, line := range strings.Split(block, "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "---") {
			continue
		}
		if value < 0 {
			if strings.Contains(strings.SplitN(t, " ", 2)[0], ":") {
				continue // a label line
			}
			v, rest, ok := strings.Cut(t, " ")
			if !ok {
				return 0, nil, false
			}
			n, err := parseValue(v)
			if err != nil {
				return 0, nil, false
			}
			value = n
			frames = append(frames, strings.TrimSpace(rest))
			continue
		}
		frames = append(frames, t)
	}
	return value, frames, value >= 0
}

// parseValue parses a pprof value: 1.50s, 20ms, 300us, 12ns, 2049, 1.5kB, 3MB.
func parseValue(s string) (float64, error) {
	units := []struct {
		suffix string
		scale  float64
	}{{"ms", 1e6}, {"us", 1e3}, {"µs", 1e3}, {"ns", 1}, {"s", 1e9}, {"kB", 1 << 10}, {"MB", 1 << 20}, {"GB", 1 << 30}, {"B", 1}}
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			n, err := strconv.ParseFloat(strings.TrimSuffix(s, u.suffix), 64)
			return n * u.scale, err
		}
	}
	return strconv.ParseFloat(s, 64)
}
