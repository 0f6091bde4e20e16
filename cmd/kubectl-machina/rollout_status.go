package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/wait"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// statusPoll is how often "rollout status" reads the deployment again.
const statusPoll = time.Second

// readTimeout bounds one read of the deployment.
const readTimeout = 30 * time.Second

func newRolloutStatusCommand(o *options) *cobra.Command {
	watch := true
	timeout := time.Duration(0)
	cmd := &cobra.Command{
		Use:   "status MACHINEDEPLOYMENT",
		Short: "Show the status of a MachineDeployment's rollout, and wait for it to finish",
		Long: `status prints the rollout's progress, as kubectl rollout status does for a
Deployment, and by default waits until the rollout is done. It exits non-zero when
the deployment exceeds its progress deadline, or when --timeout passes first.`,
		Example: `  kubectl machina rollout status web
  kubectl machina rollout status web --timeout=10m
  kubectl machina rollout status web --watch=false`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.clients()
			if err != nil {
				return err
			}
			return runRolloutStatus(cmd.Context(), c, args[0], watch, timeout, o.streams.Out)
		},
	}
	cmd.Flags().BoolVarP(&watch, "watch", "w", true, "wait until the rollout is done")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "how long to wait before giving up (0: forever)")
	return cmd
}

func runRolloutStatus(ctx context.Context, c *clients, name string, watch bool, timeout time.Duration, out io.Writer) error {
	// The timeout bounds the wait, not the reads: a read made just before
	// the deadline must not fail with a client error instead of "timed out".
	pollCtx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		pollCtx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	last := ""
	err := wait.PollUntilContextCancel(pollCtx, statusPoll, true, func(context.Context) (bool, error) {
		readCtx, cancel := context.WithTimeout(ctx, readTimeout)
		defer cancel()
		d, err := c.deployment(readCtx, name)
		if err != nil {
			return false, err
		}
		msg, done, err := rolloutStatus(d)
		if msg != last {
			fmt.Fprint(out, msg)
			last = msg
		}
		if err != nil {
			return false, err
		}
		return done || !watch, nil
	})
	if err != nil && ctx.Err() == nil && pollCtx.Err() != nil && errors.Is(err, pollCtx.Err()) {
		return fmt.Errorf("timed out waiting for the rollout of machinedeployment %q to finish", name)
	}
	return err
}

// rolloutStatus is kubectl's DeploymentStatusViewer for a MachineDeployment:
// a message, whether the rollout is done, and an error when it failed.
func rolloutStatus(d *v1alpha1.MachineDeployment) (string, bool, error) {
	if d.Generation > d.Status.ObservedGeneration {
		return "Waiting for machinedeployment spec update to be observed...\n", false, nil
	}
	for _, c := range d.Status.Conditions {
		if c.Type != v1alpha1.MachineDeploymentProgressing {
			continue
		}
		switch {
		case c.Reason == "ProgressDeadlineExceeded":
			return "", false, fmt.Errorf("machinedeployment %q exceeded its progress deadline", d.Name)
		case c.Reason == "InPlaceUpdateFailed" && c.Status == v1alpha1.ConditionFalse:
			// In Auto the manager replaces the failed machines and the
			// rollout goes on: say so and keep waiting. In Manual they wait
			// for the user: stop, as for a missed deadline.
			if ip := d.Spec.Strategy.InPlaceUpdate; ip != nil && ip.OrchestrationType == v1alpha1.OrchestrationTypeManual {
				return "", false, fmt.Errorf("machinedeployment %q: in-place update failed: %s", d.Name, c.Message)
			}
			return fmt.Sprintf("Waiting for machinedeployment %q rollout to finish: in-place update failed: %s\n", d.Name, c.Message), false, nil
		}
	}
	want := d.Spec.Replicas
	switch st := d.Status; {
	case st.UpdatedReplicas < want:
		return fmt.Sprintf("Waiting for machinedeployment %q rollout to finish: %d out of %d new machines have been updated...\n", d.Name, st.UpdatedReplicas, want), false, nil
	case st.Replicas > st.UpdatedReplicas:
		return fmt.Sprintf("Waiting for machinedeployment %q rollout to finish: %d old machines are pending termination...\n", d.Name, st.Replicas-st.UpdatedReplicas), false, nil
	case st.AvailableReplicas < st.UpdatedReplicas:
		return fmt.Sprintf("Waiting for machinedeployment %q rollout to finish: %d of %d updated machines are available...\n", d.Name, st.AvailableReplicas, st.UpdatedReplicas), false, nil
	}
	return fmt.Sprintf("machinedeployment %q successfully rolled out\n", d.Name), true, nil
}
