package main

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
)

// version and commit are set at build time with -ldflags "-X main.version=... -X main.commit=...";
// otherwise they come from the build info.
var version, commit string

func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("version", "agentd version", "Print the version and commit of agentd and the versions of OPA and cel-go it is built with.", stderr)
	if _, code, ok := fs.parse(args, stdout, 0, 0); !ok {
		return code
	}
	v, c := version, commit
	deps := map[string]string{}
	if info, ok := debug.ReadBuildInfo(); ok {
		if v == "" {
			v = info.Main.Version
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && c == "" {
				c = s.Value
			}
		}
		for _, d := range info.Deps {
			deps[d.Path] = d.Version
		}
	}
	fmt.Fprintf(stdout, "agentd %s\ncommit %s\nopa %s\ncel-go %s\n", orUnknown(v), orUnknown(c),
		orUnknown(deps["github.com/open-policy-agent/opa"]), orUnknown(deps["github.com/google/cel-go"]))
	return exitOK
}

// buildVersion is the version runVersion prints.
func buildVersion() string {
	if version != "" {
		return version
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		return orUnknown(info.Main.Version)
	}
	return orUnknown("")
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
