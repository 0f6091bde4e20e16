package main

import (
	"github.com/spf13/cobra"
)

// The rollout verbs follow kubectl rollout's for Deployments, on
// MachineDeployments, with the semantics machina's MachineDeployment
// controller gives them (core/internal/controller/machinedeployment):
// revisions are the MachineSets' deployment.kubernetes.io/revision
// annotations, undo sets spec.rollbackTo, pause sets spec.paused, restart
// sets spec.rolloutAfter.
func newRolloutCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout SUBCOMMAND",
		Short: "Manage the rollout of a MachineDeployment (kubectl rollout for MachineDeployments)",
		Long: `rollout does for MachineDeployments what kubectl rollout does for Deployments, which
it cannot do for custom resources: status, history, undo, pause, resume and restart.`,
	}
	cmd.AddCommand(
		newRolloutStatusCommand(o),
		newRolloutHistoryCommand(o),
		newRolloutUndoCommand(o),
		newRolloutPauseCommand(o, true),
		newRolloutPauseCommand(o, false),
		newRolloutRestartCommand(o),
	)
	return cmd
}
