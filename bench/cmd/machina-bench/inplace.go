package main

import (
	"context"
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// The in-place rollout's deployment and class.
const (
	inPlaceDeployment = "inplace"
	classInPlace      = "bench-inplace"
)

// createInPlaceClass creates the class whose Nodes the virtualnode driver
// updates in place as a node agent would: each update takes duration and
// never fails.
func (b *bench) createInPlaceClass(ctx context.Context) error {
	class := &v1alpha1.MachineClass{
		ObjectMeta: metav1.ObjectMeta{Name: classInPlace, Namespace: benchNamespace},
		Provider:   "virtualnode",
		ProviderSpec: runtime.RawExtension{Raw: fmt.Appendf(nil,
			`{"bootDelay":%q,"capacity":{"cpu":"2","memory":"4Gi","pods":"110"},"inPlaceUpdate":{"duration":%q,"failureRate":0}}`,
			b.cfg.bootDelay, b.cfg.inPlaceDuration)},
		SecretRef: &corev1.SecretReference{Name: secretName, Namespace: benchNamespace},
	}
	if err := b.client.Create(ctx, class); err != nil {
		return fmt.Errorf("creating MachineClass %s: %w", classInPlace, err)
	}
	return nil
}

// newInPlaceDeployment returns a MachineDeployment of zero machines with
// the InPlaceUpdate strategy (Auto, maxSurge 0, maxUnavailable a
// percentage), MCM's shape.
func newInPlaceDeployment(unavailablePercent int) *v1alpha1.MachineDeployment {
	md := newDeployment(inPlaceDeployment, classInPlace, intstr.FromInt32(0))
	zero, unavailable := intstr.FromInt32(0), intstr.FromString(fmt.Sprintf("%d%%", unavailablePercent))
	md.Spec.Strategy = v1alpha1.MachineDeploymentStrategy{
		Type: v1alpha1.InPlaceUpdateMachineDeploymentStrategyType,
		InPlaceUpdate: &v1alpha1.InPlaceUpdateMachineDeployment{
			UpdateConfiguration: v1alpha1.UpdateConfiguration{MaxSurge: &zero, MaxUnavailable: &unavailable},
			OrchestrationType:   v1alpha1.OrchestrationTypeAuto,
		},
	}
	md.Spec.Template.Labels["config"] = "v1"
	return md
}

// scenarioInPlace brings MachineDeployment inplace to n machines (not
// measured), then changes a label of its template and waits until the
// in-place rollout is complete: n machines Running in the new MachineSet
// (the deployment's updated and available replicas), on the same n Nodes.
// The virtualnode driver plays each node's agent. It counts the VMs the
// driver created and deleted meanwhile (its Node creations and deletions;
// an in-place rollout must have none), the machines that appeared, and the
// simulated agents' writes, and compares the time with the least the
// budget allows: ceil(n/maxUnavailable) waves of one update each.
func (b *bench) scenarioInPlace(ctx context.Context, n, unavailablePercent int) ScenarioResult {
	name := fmt.Sprintf("in-place rollout %d (maxUnavailable %d%%)", n, unavailablePercent)
	fail := func(err error) ScenarioResult {
		return ScenarioResult{Name: name, Machines: n, Error: "setting up: " + err.Error()}
	}
	if err := b.createInPlaceClass(ctx); err != nil {
		return fail(err)
	}
	if err := b.client.Create(ctx, newInPlaceDeployment(unavailablePercent)); err != nil {
		return fail(fmt.Errorf("creating MachineDeployment %s: %w", inPlaceDeployment, err))
	}
	if err := b.scaleTo(ctx, inPlaceDeployment, n); err != nil {
		return fail(err)
	}
	if err := b.waitRunning(ctx, inPlaceDeployment, classInPlace, n); err != nil {
		return fail(err)
	}
	fmt.Printf("scenario %s: %d machines Running\n", name, n)

	unavailable := max(1, n*unavailablePercent/100) // maxUnavailable rounds down; 0 and 0 would mean 1
	waves := int(math.Ceil(float64(n) / float64(unavailable)))
	res := b.measure(ctx, name, n, func(ctx context.Context, r *ScenarioResult) error {
		b.tracker.resetInPlace()
		start := time.Now()
		// A label of the machines' template: a change of the node
		// template alone is applied without a rollout.
		patch := `{"spec":{"template":{"metadata":{"labels":{"config":"v2"}}}}}`
		// Done is judged against the generation this change made: the
		// tracker's cache may still hold the deployment before it, whose
		// status says complete.
		gen, err := patchDeployment(ctx, b.client, inPlaceDeployment, patch)
		if err != nil {
			return err
		}
		err = waitFor(ctx, b.cfg.timeout, "in-place rollout complete", b.checkChildren, func() (bool, string) {
			c := b.tracker.census(inPlaceDeployment)
			md, mdErr := b.tracker.deployment(ctx, inPlaceDeployment)
			if mdErr != nil {
				return false, mdErr.Error()
			}
			state := fmt.Sprintf("%d machines, %d Running, %d Nodes; updated %d, available %d", c.machines, c.running, c.nodes,
				md.Status.UpdatedReplicas, md.Status.AvailableReplicas)
			return c.machines == n && c.running == n && md.Status.ObservedGeneration >= gen &&
				int(md.Status.UpdatedReplicas) == n && int(md.Status.AvailableReplicas) == n && int(md.Status.Replicas) == n, state
		})
		r.Extra["unavailable"] = float64(unavailable)
		r.Extra["waves"] = float64(waves)
		r.Extra["updateSeconds"] = b.cfg.inPlaceDuration.Seconds()
		r.Extra["inPlaceLowerBoundSeconds"] = float64(waves) * b.cfg.inPlaceDuration.Seconds()
		r.Extra["machinesCreated"] = float64(b.tracker.appeared(inPlaceDeployment, start))
		selected, back := b.tracker.inPlaceTimes()
		slots := slotUseOf(selected, back, start, time.Now(), unavailable)
		r.Extra["slotUse"] = slots.Use
		r.Extra["cycleMedianSeconds"] = quantile(slots.Cycles, 0.5).Seconds()
		r.Extra["cycleP90Seconds"] = quantile(slots.Cycles, 0.9).Seconds()
		r.Extra["firstSelectionSeconds"] = slots.FirstSelection.Seconds()
		return err
	})
	// The driver's VMs are its Nodes: a VM created or deleted is a Node
	// it created or deleted. Its node patches are the simulated agents'
	// reports (its heartbeats patch node status and leases).
	res.Extra["vmCreations"] = float64(res.DriverRequests.ByVerbResource["create nodes"])
	res.Extra["vmDeletions"] = float64(res.DriverRequests.ByVerbResource["delete nodes"])
	res.Extra["agentWrites"] = float64(res.DriverRequests.ByVerbResource["patch nodes"])
	return res
}

// appeared counts the machines of pool that the tracker first saw at or
// after since and that still exist.
func (t *tracker) appeared(pool string, since time.Time) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, s := range t.machines {
		if s.pool == pool && !s.seen.Before(since) {
			n++
		}
	}
	return n
}
