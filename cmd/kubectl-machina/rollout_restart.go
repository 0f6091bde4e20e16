package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func newRolloutRestartCommand(o *options) *cobra.Command {
	print := genericclioptions.NewPrintFlags("restarted").WithTypeSetter(scheme)
	cmd := &cobra.Command{
		Use:   "restart MACHINEDEPLOYMENT",
		Short: "Replace every machine of a MachineDeployment, as kubectl rollout restart does for pods",
		Long: `restart sets the MachineDeployment's spec.rolloutAfter to now (Cluster API's
spec.rollout.after): the controller then replaces every machine created before
that time by the deployment's strategy (RollingUpdate within maxSurge and
maxUnavailable; InPlaceUpdate updates the nodes in place), without a template
change. A paused deployment restarts once resumed.`,
		Example: `  kubectl machina rollout restart web
  kubectl machina rollout restart machinedeployment/web`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := deploymentName(args[0])
			if err != nil {
				return err
			}
			c, err := o.clients()
			if err != nil {
				return err
			}
			d, err := c.deployment(cmd.Context(), name)
			if err != nil {
				return err
			}
			orig := d.DeepCopy()
			now := metav1.NewTime(o.now())
			d.Spec.RolloutAfter = &now
			// The optimistic lock: a restart must not undo an edit made since
			// the read.
			if err := c.control.Patch(cmd.Context(), d, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
				return fmt.Errorf("setting spec.rolloutAfter: %w", err)
			}
			return printChanged(print, d, o.streams.Out)
		},
	}
	print.AddFlags(cmd)
	return cmd
}

// deploymentName accepts NAME or TYPE/NAME as kubectl rollout does, with TYPE
// a name of the MachineDeployment kind.
func deploymentName(arg string) (string, error) {
	kind, name, ok := strings.Cut(arg, "/")
	if !ok {
		return arg, nil
	}
	switch strings.ToLower(kind) {
	case "machinedeployment", "machinedeployments", "machinedeployment.machine.sapcloud.io", "machinedeployments.machine.sapcloud.io", "mcd":
		if name != "" {
			return name, nil
		}
	}
	return "", fmt.Errorf("%q is not a MachineDeployment: give NAME or machinedeployment/NAME", arg)
}
