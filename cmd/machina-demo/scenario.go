package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/cmd/internal/manifests"
	"github.com/machina-io/machina/core/api/v1alpha1"
)

// The objects of deploy/examples the scenario works with.
const (
	deploymentName = "demo"
	smallClass     = "virtualnode-small"
	largeClass     = "virtualnode-large"
	replicas       = 3
)

// scenario applies the examples and walks the MachineDeployment through
// creation, a rolling update held by a disruption budget and then let go, an
// in-place update, a MachineConfig rolled out to a pool of its nodes (one
// node gated by a pre-update hook) and (without --keep) a scale-down to
// zero.
func (d *demo) scenario(ctx context.Context) error {
	examples := filepath.Join(d.cfg.repo, "deploy", "examples")
	objs, err := manifests.Render(examples)
	if err != nil {
		return err
	}
	d.screen.Message("Applying deploy/examples: a Secret, MachineClasses %s and %s, MachineDeployment %s (%d replicas)",
		smallClass, largeClass, deploymentName, replicas)
	if err := manifests.Apply(ctx, d.client, objs, fieldOwner); err != nil {
		return err
	}

	step := func(what string, done func(*snapshot) bool) error {
		start := time.Now()
		if err := d.waitFor(ctx, what, d.cfg.timeout, done); err != nil {
			return err
		}
		d.screen.Message("Done in %s: %s", time.Since(start).Round(100*time.Millisecond), what)
		return nil
	}

	if err := step(fmt.Sprintf("%d machines of class %s Running, their Nodes Ready", replicas, smallClass),
		func(s *snapshot) bool { return s.settled(deploymentName, smallClass) }); err != nil {
		return err
	}

	// A disruption budget of 0 for rollouts: the rolling update surges its
	// new machine but deletes no old one until the budget is lifted.
	d.screen.Message("Disruption budget: MachineDeployment %s may delete no machine for a rollout (spec.disruption.budgets: machines 0, reasons [Rollout])", deploymentName)
	if err := d.patchDeployment(ctx, `{"spec":{"disruption":{"budgets":[{"machines":0,"reasons":["Rollout"]}]}}}`); err != nil {
		return err
	}
	d.screen.Message("Rolling update: MachineDeployment %s to class %s (maxSurge 1, maxUnavailable 0)", deploymentName, largeClass)
	if err := d.patchDeployment(ctx, fmt.Sprintf(`{"spec":{"template":{"spec":{"class":{"name":%q}}}}}`, largeClass)); err != nil {
		return err
	}
	if err := step("held by the budget: the new machine Running, every old one kept, Progressing naming the budget",
		func(s *snapshot) bool { return s.heldByBudget(deploymentName, smallClass, largeClass) }); err != nil {
		return err
	}
	d.screen.Message("Lifting the budget")
	if err := d.patchDeployment(ctx, `{"spec":{"disruption":null}}`); err != nil {
		return err
	}
	if err := step(fmt.Sprintf("rolled out: %d machines of class %s, the old machines and their Nodes gone", replicas, largeClass),
		func(s *snapshot) bool {
			return s.settled(deploymentName, largeClass) && s.machineNodes() == replicas
		}); err != nil {
		return err
	}

	if err := d.inPlaceUpdate(ctx, step); err != nil {
		return err
	}
	if err := d.poolRollout(ctx, step); err != nil {
		return err
	}

	if d.cfg.keep {
		return d.keepRunning(ctx)
	}

	d.screen.Message("Scaling MachineDeployment %s to 0", deploymentName)
	if err := d.patchDeployment(ctx, `{"spec":{"replicas":0}}`); err != nil {
		return err
	}
	if err := step("scaled to zero: every machine drained and deleted, every Node gone",
		func(s *snapshot) bool {
			md := s.deployment(deploymentName)
			return md != nil && md.Status.ObservedGeneration == md.Generation && md.Status.Replicas == 0 &&
				len(s.machines) == 0 && s.machineNodes() == 0
		}); err != nil {
		return err
	}
	d.screen.Message("The demo went through the whole lifecycle")
	return nil
}

func (d *demo) patchDeployment(ctx context.Context, patch string) error {
	md := &v1alpha1.MachineDeployment{}
	md.Namespace, md.Name = namespace, deploymentName
	if err := d.client.Patch(ctx, md, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return fmt.Errorf("patching MachineDeployment %s/%s: %w", namespace, deploymentName, err)
	}
	return nil
}

// waitFor shows the cluster's state until done holds for it, failing when
// timeout (unless zero) passes first or a process exits.
func (d *demo) waitFor(ctx context.Context, what string, timeout time.Duration, done func(*snapshot) bool) error {
	deadline := time.Now().Add(timeout)
	for {
		if err := d.checkChildren(); err != nil {
			return err
		}
		snap, err := takeSnapshot(ctx, d.client)
		if err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
		if err == nil {
			d.screen.Show(renderFrame(snap))
			if done(snap) {
				return nil
			}
		}
		if timeout > 0 && time.Now().After(deadline) {
			return fmt.Errorf("not reached within %s: %s\nlast lines of the manager's log:\n%s\nlast lines of the driver's log:\n%s",
				timeout, what, d.manager.Tail(20), d.driverTail(10))
		}
		if err := sleep(ctx, pollInterval); err != nil {
			return err
		}
	}
}

// keepRunning prints how to reach the cluster and shows its state until
// ctx is cancelled (Ctrl-C).
func (d *demo) keepRunning(ctx context.Context) error {
	kubectl := filepath.Join(d.cfg.assets, "kubectl")
	d.screen.Message(`Everything keeps running until Ctrl-C. In another terminal:

    export KUBECONFIG=%s
    %s get machinedeployments,machinesets,machines,nodes
    %s scale machinedeployment %s --replicas=5

  Logs: %s and %s
  Metrics: http://%s/metrics`,
		d.kubeconfig, kubectl, kubectl, deploymentName,
		d.manager.LogPath(), d.driver.LogPath(), d.managerMetrics)
	err := d.waitFor(ctx, "Ctrl-C", 0, func(*snapshot) bool { return false })
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// driverTail is the end of the driver's log, when the demo started it.
func (d *demo) driverTail(n int) string {
	if d.driver == nil {
		return "    (the driver is yours: see its own output)"
	}
	return d.driver.Tail(n)
}
