package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/diag"
)

func runCheck(_ context.Context, args []string, stdout, stderr io.Writer) int {
	_, gen, code := loadDirArg("check", args, stderr)
	if gen == nil {
		return code
	}
	printSummary(stdout, gen)
	return exitOK
}

// loadDirArg parses the single DIR argument of command and compiles it. On failure it
// prints the usage or every config error and returns a nil generation with the exit
// code.
func loadDirArg(command string, args []string, stderr io.Writer) (string, *config.Generation, int) {
	fs := flag.NewFlagSet(command, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintf(stderr, "usage: agentd %s DIR\n", command) }
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		if err == nil {
			fs.Usage()
		}
		return "", nil, exitUsage
	}
	dir := fs.Arg(0)
	gen, err := config.Load(dir, config.Options{})
	if err != nil {
		printLoadError(stderr, dir, err)
		return dir, nil, exitFailed
	}
	return dir, gen, exitOK
}

// printLoadError renders config errors with their source lines.
func printLoadError(w io.Writer, dir string, err error) {
	list, ok := diag.AsList(err)
	if !ok {
		fmt.Fprintf(w, "agentd: %v\n", err)
		return
	}
	list.Render(w, func(file string) ([]byte, bool) {
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(file)))
		return data, err == nil
	})
	fmt.Fprintf(w, "%d error(s)\n", len(list))
}

// bindingNote says what each plan binding mode checks.
var bindingNote = map[engine.BindingMode]string{
	engine.BindingStrict:   "must match a step of an accepted phase: namespace, agent, capability and parameters",
	engine.BindingIdentity: "must match a step of an accepted phase: namespace, agent and capability",
	engine.BindingOff:      "are not bound to the accepted plan; the guards alone decide",
}

// printSummary prints the compiled generation: hooks per stage in order, the required
// hook, the guards and the generation id.
func printSummary(w io.Writer, gen *config.Generation) {
	fmt.Fprintf(w, "generation %s (%d files)\n", gen.ID, len(gen.Files))
	for _, stage := range engine.Stages {
		hooks := gen.StageHooks(stage)
		fmt.Fprintf(w, "%s: %d hook(s)\n", stage, len(hooks))
		for i, h := range hooks {
			var notes []string
			if h.Required {
				notes = append(notes, "required")
			}
			if h.When != "" {
				notes = append(notes, "when "+strings.TrimSpace(h.When))
			}
			if !h.Mode.Enforcing() {
				notes = append(notes, "mode "+string(h.Mode)+": records what it would deny, changes nothing")
			}
			note := ""
			if len(notes) > 0 {
				note = " (" + strings.Join(notes, "; ") + ")"
			}
			fmt.Fprintf(w, "  %d. %s [%s]%s  %s:%d\n", i+1, h.Name, strings.Join(h.Steps, ", "), note, h.File, h.Line)
			for _, n := range h.Notes {
				fmt.Fprintf(w, "     %s\n", n)
			}
		}
	}
	if name, ok := gen.Pipeline.RequiredHook(); ok {
		fmt.Fprintf(w, "required hook: %s\n", name)
	} else {
		fmt.Fprintln(w, "required hook: none")
	}
	fmt.Fprintf(w, "plan binding: %s (tool calls %s)\n", gen.Binding, bindingNote[gen.Binding])
	if gen.MaxRequestAge > 0 {
		fmt.Fprintf(w, "max request age: %s\n", gen.MaxRequestAge)
	}
	if gen.AllowBoundaryRemoval {
		fmt.Fprintln(w, "boundary removal: allowed (settings.allow_boundary_removal): a reload to this config may drop the live required hook, guard rules or plan binding")
	}
	printOpenAIGateway(w, gen.Gateways.OpenAI)
	if len(gen.Guards) == 0 {
		fmt.Fprintln(w, "guards: none")
		return
	}
	fmt.Fprintf(w, "guards (policy revision %s):\n", gen.PolicyRevision)
	for i, g := range gen.Guards {
		code := ""
		if g.Code != "" {
			code = " code " + g.Code
		}
		mode := ""
		if !g.Mode.Enforcing() {
			mode = " mode " + string(g.Mode) + " (records what it would deny, allows)"
		}
		fmt.Fprintf(w, "  %d. %s on %s (%s)%s%s  %s:%d\n", i+1, g.Name, g.Operation, g.Kind, code, mode, g.File, g.Line)
	}
}

// printOpenAIGateway prints gateways.openai, when configured: the upstream, where its
// key comes from (never the key), the settings and the tool mapping.
func printOpenAIGateway(w io.Writer, gw *config.OpenAIGateway) {
	if gw == nil {
		return
	}
	key := "no key"
	if gw.APIKeyEnv != "" {
		key = "key from $" + gw.APIKeyEnv
	}
	fmt.Fprintf(w, "gateway openai: upstream %s (%s), on_reject %s, timeout %s, request id header %s\n",
		gw.Upstream, key, gw.OnReject, gw.Timeout, gw.RequestIDHeader)
	for _, name := range gw.Tools() {
		id, _ := gw.Tool(name)
		fmt.Fprintf(w, "  %s -> %s/%s/%s\n", name, id.Namespace, id.Agent, id.Capability)
	}
}
