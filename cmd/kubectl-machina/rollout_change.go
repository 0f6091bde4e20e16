package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

func newRolloutUndoCommand(o *options) *cobra.Command {
	toRevision := int64(0)
	print := genericclioptions.NewPrintFlags("rolled back").WithTypeSetter(scheme)
	cmd := &cobra.Command{
		Use:   "undo MACHINEDEPLOYMENT",
		Short: "Roll a MachineDeployment back to an earlier revision",
		Long: `undo asks the MachineDeployment controller to roll back to an earlier revision (by
default the one before the current) by setting spec.rollbackTo, as MCM's
clients do: the controller copies that revision's machine template into the
deployment, clears spec.rollbackTo and rolls out as for any template change. A
paused deployment is not rolled back; resume it first.`,
		Example: `  kubectl machina rollout undo web
  kubectl machina rollout undo web --to-revision=2`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.clients()
			if err != nil {
				return err
			}
			d, err := undo(cmd.Context(), c, args[0], toRevision)
			if err != nil {
				return err
			}
			return printChanged(print, d, o.streams.Out)
		},
	}
	cmd.Flags().Int64Var(&toRevision, "to-revision", 0, "the revision to roll back to (0: the one before the current)")
	print.AddFlags(cmd)
	return cmd
}

// undo sets spec.rollbackTo after checking what the controller would refuse
// with only an event: a paused deployment, a revision that does not exist,
// or a deployment with nothing to roll back to.
func undo(ctx context.Context, c *clients, name string, toRevision int64) (*v1alpha1.MachineDeployment, error) {
	if toRevision < 0 {
		return nil, fmt.Errorf("--to-revision must be 0 or more, not %d", toRevision)
	}
	d, sets, err := c.history(ctx, name)
	if err != nil {
		return nil, err
	}
	if d.Spec.Paused {
		return nil, fmt.Errorf("you cannot roll back a paused machinedeployment; resume it first with 'kubectl machina rollout resume %s' and try again", name)
	}
	if toRevision == 0 {
		if len(sets) < 2 {
			return nil, errors.New("no rollout history found: there is no revision before the current one")
		}
	} else if setOfRevision(sets, toRevision) == nil {
		return nil, fmt.Errorf("unable to find the specified revision %d in the history of machinedeployment %q", toRevision, name)
	}
	orig := d.DeepCopy()
	d.Spec.RollbackTo = &v1alpha1.RollbackConfig{Revision: toRevision}
	if err := c.control.Patch(ctx, d, client.MergeFrom(orig)); err != nil {
		return nil, fmt.Errorf("setting spec.rollbackTo: %w", err)
	}
	return d, nil
}

func newRolloutPauseCommand(o *options, pause bool) *cobra.Command {
	verb, done := "pause", "paused"
	short := "Pause a MachineDeployment's rollout: template changes wait until it is resumed"
	if !pause {
		verb, done = "resume", "resumed"
		short = "Resume a paused MachineDeployment's rollout"
	}
	print := genericclioptions.NewPrintFlags(done).WithTypeSetter(scheme)
	cmd := &cobra.Command{
		Use:     verb + " MACHINEDEPLOYMENT",
		Short:   short,
		Long:    short + ". It sets spec.paused; scaling goes on while paused, as for a Deployment.",
		Example: "  kubectl machina rollout " + verb + " web",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.clients()
			if err != nil {
				return err
			}
			d, err := c.deployment(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if d.Spec.Paused == pause {
				return fmt.Errorf("machinedeployment.machine.sapcloud.io/%s is already %s", d.Name, done)
			}
			orig := d.DeepCopy()
			d.Spec.Paused = pause
			if err := c.control.Patch(cmd.Context(), d, client.MergeFrom(orig)); err != nil {
				return fmt.Errorf("setting spec.paused: %w", err)
			}
			return printChanged(print, d, o.streams.Out)
		},
	}
	print.AddFlags(cmd)
	return cmd
}

// printChanged prints the changed deployment as kubectl does:
// "machinedeployment.machine.sapcloud.io/NAME paused", or in the -o format.
func printChanged(print *genericclioptions.PrintFlags, d *v1alpha1.MachineDeployment, out io.Writer) error {
	printer, err := print.ToPrinter()
	if err != nil {
		return err
	}
	return printer.PrintObj(d, out)
}
