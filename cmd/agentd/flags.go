package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// cmdFlags is the flag set of one command, with the usage --help prints: the synopsis,
// what the command does, and its flags.
type cmdFlags struct {
	*flag.FlagSet
	synopsis, doc string
}

// newFlags returns the flag set of command name; usage goes to stderr on a mistake.
func newFlags(name, synopsis, doc string, stderr io.Writer) *cmdFlags {
	f := &cmdFlags{FlagSet: flag.NewFlagSet(name, flag.ContinueOnError), synopsis: synopsis, doc: doc}
	f.SetOutput(stderr)
	f.Usage = func() {} // parse prints the usage where it belongs
	return f
}

func (f *cmdFlags) printUsage(w io.Writer) {
	fmt.Fprintf(w, "usage: %s\n\n%s\n", f.synopsis, strings.TrimSpace(f.doc))
	hasFlags := false
	f.VisitAll(func(*flag.Flag) { hasFlags = true })
	if hasFlags {
		fmt.Fprintln(w, "\nflags:")
		out := f.Output()
		f.SetOutput(w)
		f.PrintDefaults()
		f.SetOutput(out)
	}
}

// parse parses args, flags before or after the positional arguments, and checks that
// there are between min and max positional arguments (max < 0: no limit). -h and
// --help print the usage to stdout: it returns ok false with exitOK; a mistake prints
// the usage to stderr and returns exitUsage.
func (f *cmdFlags) parse(args []string, stdout io.Writer, minArgs, maxArgs int) (pos []string, code int, ok bool) {
	rest := args
	for {
		err := f.Parse(rest)
		if errors.Is(err, flag.ErrHelp) {
			f.printUsage(stdout)
			return nil, exitOK, false
		}
		if err != nil {
			f.printUsage(f.Output())
			return nil, exitUsage, false
		}
		rest = f.Args()
		if len(rest) == 0 {
			break
		}
		pos = append(pos, rest[0])
		rest = rest[1:]
	}
	if len(pos) < minArgs || maxArgs >= 0 && len(pos) > maxArgs {
		fmt.Fprintf(f.Output(), "agentd %s: wrong number of arguments\n", f.Name())
		f.printUsage(f.Output())
		return nil, exitUsage, false
	}
	return pos, exitOK, true
}
