package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// testScaleDown: one machine for each key of the order, so that every
// victim is placed by a different key, plus a Failed machine (replaced at
// any replicas) and one already being deleted.
func (p *plugin) testScaleDown(t *testing.T) {
	const ns = "scale"
	p.namespace(t, ns)
	d := p.deployment(t, ns, "web", 6, v1alpha1.MachineDeploymentStatus{Replicas: 8})
	ms := p.machineSet(t, d, "web-1", "1", 6, v1alpha1.MachineSetStatus{Replicas: 8}, nil)
	marked := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	phase := func(ph v1alpha1.MachinePhase) func(*v1alpha1.Machine) {
		return func(m *v1alpha1.Machine) { m.Status.CurrentStatus.Phase = ph }
	}
	objs := []client.Object{d, ms,
		p.machine(t, ns, "m-running", ms, "", nil, phase(v1alpha1.MachineRunning)),
		p.machine(t, ns, "m-preserved", ms, "", map[string]string{v1alpha1.PreserveAnnotation: v1alpha1.PreserveValueNow}, phase(v1alpha1.MachineRunning)),
		p.machine(t, ns, "m-pending", ms, "", nil, phase(v1alpha1.MachinePending)),
		p.machine(t, ns, "m-unknown", ms, "", nil, phase(v1alpha1.MachineUnknown)),
		p.machine(t, ns, "m-marked", ms, "", map[string]string{v1alpha1.MarkedForDeletionTimeAnnotation: marked.Format(time.RFC3339)}, phase(v1alpha1.MachineRunning)),
		p.machine(t, ns, "m-priority", ms, "", map[string]string{v1alpha1.MachinePriorityAnnotation: "1"}, phase(v1alpha1.MachineRunning)),
		p.machine(t, ns, "m-failed", ms, "", nil, phase(v1alpha1.MachineFailed)),
		p.machine(t, ns, "m-going", ms, "", nil, phase(v1alpha1.MachineTerminating)),
	}
	now := latest(objs...).Add(48 * time.Hour)

	out, err := p.run(t, now, ns, "scale-down", "--dry-run", "web", "--replicas=2")
	require.NoError(t, err)
	golden(t, "scale-down", out)

	// The same set named directly, and only the machines it deletes.
	out, err = p.run(t, now, ns, "scale-down", "--dry-run", "machineset/web-1", "--replicas=2", "-o", "name")
	require.NoError(t, err)
	require.Equal(t, `machine.machine.sapcloud.io/m-failed
machine.machine.sapcloud.io/m-priority
machine.machine.sapcloud.io/m-marked
machine.machine.sapcloud.io/m-unknown
machine.machine.sapcloud.io/m-pending
`, out)

	// A second set with machines: the deployment is mid-rollout.
	ms2 := p.machineSet(t, d, "web-2", "2", 1, v1alpha1.MachineSetStatus{Replicas: 1}, nil)
	p.machine(t, ns, "m-new", ms2, "", nil, phase(v1alpha1.MachineRunning))
	_, err = p.run(t, now, ns, "scale-down", "--dry-run", "web", "--replicas=2")
	require.EqualError(t, err, `machinedeployment "web" is rolling out: 2 MachineSets have machines, and a scale-down spreads over them; name one (machineset/NAME)`)

	_, err = p.run(t, now, ns, "scale-down", "web", "--replicas=2")
	require.ErrorContains(t, err, "scale-down only runs with --dry-run")
	_, err = p.run(t, now, ns, "scale-down", "--dry-run", "web")
	require.ErrorContains(t, err, "--replicas is required")
}

// testUsageErrors: the verbs that need arguments say so.
func (p *plugin) testUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"why"}, {"drain", "--dry-run"}, {"rollout", "status"}, {"rollout", "undo"}} {
		_, err := p.run(t, time.Now(), "default", args...)
		require.Error(t, err, "%v", args)
	}
}
