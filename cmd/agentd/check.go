package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/diag"
)

const checkDoc = `
Compile a config directory and print its summary: the hooks of each stage in run
order, the required hook, the guards, where each data document is mounted. Every
config error is printed as file:line:col: kind: message with the offending line.

Then the warnings: what compiles but lets every plan through or silently does
nothing: no required after_planning hook, a top-level folder that looks like a
misspelled one (hook/ for hooks/), a data reference nothing provides, a rego query
whose package has no deny rule, a deny rule that reads a member a plan may lack
(undefined, so it denies nothing), and what OPA's strict mode rejects.

Exit 0: compiles (with --strict: and no warning); 1: config errors (or warnings with
--strict); 2: usage.`

func runCheck(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("check", "agentd check [--strict] DIR", checkDoc, stderr)
	strict := fs.Bool("strict", false, "fail (exit 1) when there are warnings")
	pos, code, ok := fs.parse(args, stdout, 1, 1)
	if !ok {
		return code
	}
	gen, code := loadDir(pos[0], stderr)
	if gen == nil {
		return code
	}
	printSummary(stdout, gen)
	warnings := config.Warnings(gen)
	for _, w := range warnings {
		fmt.Fprintf(stdout, "warning: %s\n", w)
	}
	if len(warnings) > 0 {
		fmt.Fprintf(stdout, "%d warning(s)\n", len(warnings))
		if *strict {
			return exitFailed
		}
	}
	return exitOK
}

// loadDir compiles dir; on failure it prints every config error and returns a nil
// generation with exit code 1.
func loadDir(dir string, stderr io.Writer) (*config.Generation, int) {
	gen, err := config.Load(dir, config.Options{})
	if err != nil {
		printLoadError(stderr, dir, err)
		return nil, exitFailed
	}
	return gen, exitOK
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
// hook, the gateways, the guards and the generation id.
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
	printDataMounts(w, gen)
	printOpenAIGateway(w, gen.Gateways.OpenAI)
	printMCPGateway(w, gen.Gateways.MCP)
	for i, l := range gen.LabelRules {
		if i == 0 {
			fmt.Fprintln(w, "labels (attached to reported results):")
		}
		fmt.Fprintf(w, "  %d. %s when %s  %s:%d\n", i+1, l.Label, l.When, l.File, l.Line)
	}
	for i, o := range gen.Observers {
		if i == 0 {
			fmt.Fprintln(w, "observers:")
		}
		fmt.Fprintf(w, "  %d. %s on %s (log at %s)  %s:%d\n", i+1, o.Name, o.Operation, strings.Join(o.On, ", "), o.File, o.Line)
	}
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
	fmt.Fprintf(w, "  policy revision %s is your name for these guard rules: it is stamped on every operation decision and record,\n"+
		"  so change it whenever you change the rules (the generation id changes with any file)\n", gen.PolicyRevision)
}

// printDataMounts prints where each data document is mounted below data.
func printDataMounts(w io.Writer, gen *config.Generation) {
	for _, m := range gen.DataMounts {
		fmt.Fprintf(w, "data: %s mounted at %s\n", m.File, m.Path)
	}
}

// printMCPGateway prints the MCP gateway's upstream servers, if any: each one's
// catalog identity, how it is reached and its tools.
func printMCPGateway(w io.Writer, gw *config.MCPGateway) {
	if gw == nil {
		return
	}
	fmt.Fprintf(w, "MCP gateway: %d upstream server(s)\n", len(gw.Servers))
	for i, s := range gw.Servers {
		via := "http " + s.URL
		if len(s.Command) > 0 {
			via = "stdio " + strings.Join(s.Command, " ")
		}
		tools := make([]string, len(s.Tools))
		for j, t := range s.Tools {
			tools[j] = t.Name
		}
		fmt.Fprintf(w, "  %d. %s/%s (%s) tools [%s]  %s:%d\n", i+1, s.Namespace, s.Name, via, strings.Join(tools, ", "), s.File, s.Line)
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
