// Command deploy-check checks the repository's deploy/ folder (see package check): the
// Helm chart rendered with Helm's engine, the kustomizations built with kustomize's
// library, every manifest strictly decoded into the Kubernetes API types, the promises
// of agentd's Deployments, and the ConfigMap's copy of examples/stock-agent.
//
//	deploy-check -root ../..                  # what make deploy-check runs
//	deploy-check -root ../.. -write-configmap # regenerate deploy/kubernetes/base/configmap.yaml
//
// It prints every problem and exits 1 when there is one, 2 on a usage error.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/agentd-dev/agentd/tools/deploy/check"
)

func main() {
	fs := flag.NewFlagSet("deploy-check", flag.ContinueOnError)
	root := fs.String("root", ".", "the agentd repository")
	write := fs.Bool("write-configmap", false, "write deploy/kubernetes/base/configmap.yaml from examples/stock-agent before checking")
	if err := fs.Parse(os.Args[1:]); err != nil || fs.NArg() > 0 {
		os.Exit(2)
	}
	if *write {
		if err := check.WriteConfigMap(*root); err != nil {
			fmt.Fprintln(os.Stderr, "deploy-check:", err)
			os.Exit(1)
		}
	}
	n, problems := check.Repo(*root)
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, p)
	}
	if len(problems) > 0 {
		fmt.Fprintf(os.Stderr, "deploy-check: %d problems\n", len(problems))
		os.Exit(1)
	}
	fmt.Printf("deploy-check: %d manifests decoded strictly, none with a problem\n", n)
}
