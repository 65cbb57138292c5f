// Command gendocs writes what is generated from the built-in action registry: the action
// $defs of the HookSet schema (the step's action list and one action.<name> per action;
// every other part of the schema stays as written) and the README's action table
// (between <!-- actions:begin --> and <!-- actions:end -->). The go:generate line of
// package builtin runs it:
//
//	go generate ./builtin
//
// and a test of this package fails when either file differs from what it would write.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
)

// output is one generated file: its current contents in, its regenerated contents out.
type output struct {
	path  string
	regen func([]byte) ([]byte, error)
}

func main() {
	schema := flag.String("schema", "../schemas/hookset.schema.json", "the HookSet schema to update")
	readme := flag.String("readme", "../README.md", "the README whose action table to update")
	flag.Parse()
	for _, o := range outputs(*schema, *readme) {
		if err := o.write(); err != nil {
			fmt.Fprintln(os.Stderr, "gendocs:", err)
			os.Exit(1)
		}
	}
}

func outputs(schema, readme string) []output {
	return []output{{schema, spliceSchema}, {readme, spliceTable}}
}

// write regenerates o's file and rewrites it when that changes it.
func (o output) write() error {
	old, err := os.ReadFile(o.path)
	if err != nil {
		return err
	}
	out, err := o.regen(old)
	if err != nil {
		return fmt.Errorf("%s: %w", o.path, err)
	}
	if bytes.Equal(old, out) {
		return nil
	}
	return os.WriteFile(o.path, out, 0o644)
}
