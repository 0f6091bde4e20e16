package main

import (
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// options are what every verb shares: the connection flags, the output
// streams and the clock.
type options struct {
	config  *genericclioptions.ConfigFlags
	target  targetFlags
	streams genericiooptions.IOStreams
	// now is the clock for ages and deadlines; tests fix it so that golden
	// output does not change with the time a test runs.
	now func() time.Time
}

func newRootCommand(streams genericiooptions.IOStreams) *cobra.Command {
	return newRootCommandWithClock(streams, time.Now)
}

func newRootCommandWithClock(streams genericiooptions.IOStreams, now func() time.Time) *cobra.Command {
	o := &options{
		config:  genericclioptions.NewConfigFlags(true).WithDiscoveryBurst(300).WithDiscoveryQPS(50.0),
		streams: streams,
		now:     now,
	}
	cmd := &cobra.Command{
		Use:   "kubectl-machina",
		Short: "Inspect and operate machina's MachineDeployments, MachineSets, Machines and their Nodes",
		Long: `kubectl machina answers the questions an operator of machina asks most, from the
objects in the cluster: what a MachineDeployment is made of (tree), why a machine is
not Running (why), what a drain or a scale-down would remove (drain --dry-run,
scale-down --dry-run), and drives MachineDeployment rollouts (rollout), which
kubectl rollout cannot do for custom resources.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// Help and usage say "kubectl machina", the way kubectl runs it.
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl machina"},
	}
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)
	o.config.AddFlags(cmd.PersistentFlags())
	o.target.addFlags(cmd.PersistentFlags())
	cmd.AddCommand(
		newTreeCommand(o),
		newWhyCommand(o),
		newDrainCommand(o),
		newRolloutCommand(o),
		newScaleDownCommand(o),
	)
	return cmd
}
