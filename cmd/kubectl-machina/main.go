// Command kubectl-machina is a kubectl plugin for machina: it answers the
// questions operators ask about MachineDeployments, MachineSets, Machines
// and their Nodes (what is there, why a machine is not Running, what a
// drain or a scale-down would remove) and drives rollouts, which
// `kubectl rollout` cannot do for custom resources.
//
// Installed on the PATH (or through krew, deploy/krew/machina.yaml) it runs
// as `kubectl machina VERB`. It takes kubectl's connection flags
// (--kubeconfig, --context, -n, ...) through k8s.io/cli-runtime, so it
// reaches the same cluster and namespace as kubectl would. See
// docs/kubectl-plugin.md.
package main

import (
	"fmt"
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func main() {
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	if err := newRootCommand(streams).Execute(); err != nil {
		// As kubectl: the error on stderr, exit code 1.
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(1)
	}
}
