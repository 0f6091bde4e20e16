package main

import (
	"context"
	"fmt"
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
	"github.com/machina-io/machina/core/api/v1alpha1"
)

// The pool rollout's deployment, class, pool and MachineConfig.
const (
	poolDeployment = "pool"
	classPool      = "bench-pool"
	poolName       = "bench"
	poolConfig     = "99-bench-pool"
)

// createPoolClass creates the class whose Nodes the virtualnode driver
// serves as a node agent of the MachineConfig handshake would: each
// update writes for duration and never fails.
func (b *bench) createPoolClass(ctx context.Context) error {
	class := &v1alpha1.MachineClass{
		ObjectMeta: metav1.ObjectMeta{Name: classPool, Namespace: benchNamespace},
		Provider:   "virtualnode",
		ProviderSpec: runtime.RawExtension{Raw: fmt.Appendf(nil,
			`{"bootDelay":%q,"capacity":{"cpu":"2","memory":"4Gi","pods":"110"},"machineConfig":{"duration":%q,"failureRate":0}}`,
			b.cfg.bootDelay, b.cfg.poolDuration)},
		SecretRef: &corev1.SecretReference{Name: secretName, Namespace: benchNamespace},
	}
	if err := b.client.Create(ctx, class); err != nil {
		return fmt.Errorf("creating MachineClass %s: %w", classPool, err)
	}
	return nil
}

// scenarioPool brings MachineDeployment pool to n machines (not measured),
// then creates a MachineConfig with a file and a unit and a
// MachineConfigPool of the deployment's machines (machineOwnerRef) with
// maxUnavailable a percentage, and waits until the pool is Updated: the
// manager rendered the configuration, gave it to every node within the
// budget, and drained and uncordoned each when its (simulated) agent
// asked. It compares the time with the least the budget allows:
// ceil(n/maxUnavailable) waves of one update each, and counts the writes
// per node of the manager and of the simulated agents.
func (b *bench) scenarioPool(ctx context.Context, n, unavailablePercent int) ScenarioResult {
	name := fmt.Sprintf("pool rollout %d (maxUnavailable %d%%)", n, unavailablePercent)
	fail := func(err error) ScenarioResult {
		return ScenarioResult{Name: name, Machines: n, Error: "setting up: " + err.Error()}
	}
	if err := b.createPoolClass(ctx); err != nil {
		return fail(err)
	}
	if err := b.client.Create(ctx, newDeployment(poolDeployment, classPool, intstr.FromInt32(0))); err != nil {
		return fail(fmt.Errorf("creating MachineDeployment %s: %w", poolDeployment, err))
	}
	if err := b.scaleTo(ctx, poolDeployment, n); err != nil {
		return fail(err)
	}
	if err := b.waitRunning(ctx, poolDeployment, classPool, n); err != nil {
		return fail(err)
	}
	fmt.Printf("scenario %s: %d machines Running\n", name, n)

	unavailable := max(1, n*unavailablePercent/100) // rounds down; 0 means 1
	waves := int(math.Ceil(float64(n) / float64(unavailable)))
	res := b.measure(ctx, name, n, func(ctx context.Context, r *ScenarioResult) error {
		mc := &mcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: poolConfig, Labels: map[string]string{mcv1.RoleLabel: poolName}}}
		mc.Spec.Config.Raw = []byte(`{"ignition":{"version":"3.2.0"},` +
			`"storage":{"files":[{"path":"/etc/bench.conf","mode":420,"contents":{"source":"data:,bench%0A"}}]},` +
			`"systemd":{"units":[{"name":"bench.service","enabled":true,"contents":"[Service]\nExecStart=/bin/true\n"}]}}`)
		if err := b.client.Create(ctx, mc); err != nil {
			return fmt.Errorf("creating MachineConfig %s: %w", poolConfig, err)
		}
		pct := intstr.FromString(fmt.Sprintf("%d%%", unavailablePercent))
		pool := &mcv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: poolName}}
		pool.Spec.MachineConfigSelector = &metav1.LabelSelector{MatchLabels: map[string]string{mcv1.RoleLabel: poolName}}
		pool.Spec.MachineOwnerRef = &mcv1.MachineOwnerReference{Kind: "MachineDeployment", Namespace: benchNamespace, Name: poolDeployment}
		pool.Spec.MaxUnavailable = &pct
		if err := b.client.Create(ctx, pool); err != nil {
			return fmt.Errorf("creating MachineConfigPool %s: %w", poolName, err)
		}
		err := waitFor(ctx, b.cfg.timeout, "pool Updated", b.checkChildren, func() (bool, string) {
			p := &mcv1.MachineConfigPool{}
			if err := b.client.Get(ctx, client.ObjectKey{Name: poolName}, p); err != nil {
				return false, err.Error()
			}
			st := p.Status
			state := fmt.Sprintf("target %q: %d machines, %d updated, %d unavailable, %d degraded", p.Spec.Configuration.Name,
				st.MachineCount, st.UpdatedMachineCount, st.UnavailableMachineCount, st.DegradedMachineCount)
			return meta.IsStatusConditionTrue(st.Conditions, mcv1.PoolUpdated) && int(st.UpdatedMachineCount) == n &&
				int(st.MachineCount) == n && st.Configuration.Name != "", state
		})
		r.Extra["unavailable"] = float64(unavailable)
		r.Extra["waves"] = float64(waves)
		r.Extra["updateSeconds"] = b.cfg.poolDuration.Seconds()
		r.Extra["poolLowerBoundSeconds"] = float64(waves) * b.cfg.poolDuration.Seconds()
		return err
	})
	// The driver's node patches are the simulated agents' reports (its
	// heartbeats patch node status and leases); the manager's are
	// desiredConfig, the cordons and the drain acknowledgements.
	res.Extra["agentWrites"] = float64(res.DriverRequests.ByVerbResource["patch nodes"])
	res.Extra["managerNodeWrites"] = float64(res.ManagerRequests.ByVerbResource["patch nodes"])
	return res
}
