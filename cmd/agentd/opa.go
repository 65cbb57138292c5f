package main

import (
	"context"
	"errors"
	"io"

	opacmd "github.com/open-policy-agent/opa/cmd"
	"github.com/spf13/cobra"
)

// runOPA runs OPA's own command line, linked from OPA's Go packages at the version
// go.mod pins (agentd version prints it): `agentd opa test policies/ data/`, `agentd
// opa eval`, `agentd opa check --strict`, `agentd opa fmt` behave as the stock `opa`.
func runOPA(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := opacmd.Command(&cobra.Command{
		Use:           "opa",
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "agentd opa"},
		Short:         "Open Policy Agent (OPA), as linked into agentd",
		Long:          "OPA's own command line, from OPA's Go packages at the version agentd is built with (see agentd version).",
		SilenceUsage:  true,
		SilenceErrors: false,
	}, "OPA")
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	var exit *opacmd.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.Exit
	case err != nil:
		return exitFailed
	}
	return exitOK
}
