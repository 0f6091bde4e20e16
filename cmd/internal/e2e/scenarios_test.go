package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// minReadySeconds of the test MachineDeployment. MCM's framework sets 500,
// which costs MCM nothing: its MachineSets count a machine as available as
// soon as it is Running (isMachineAvailable looks at the phase alone).
// machina counts, as Kubernetes Deployments do, only machines Running for
// minReadySeconds, so 500 would hold every availability check for more than
// eight minutes. Five seconds keep the field in play (scenario 4 checks that
// availability waits for it) at five seconds per rollout step.
const minReadySeconds = 5

// labelNodeClass is the label the virtualnode driver puts on every Node it
// creates, naming the machine class (drivers/virtualnode/README.md).
const labelNodeClass = "virtualnode.machina.io/class"

// Reasons of the MachineDeployment conditions MCM's framework checks; they
// are Kubernetes Deployment reasons, which MCM and machina keep.
const (
	reasonMinimumReplicasAvailable = "MinimumReplicasAvailable"
	reasonNewMachineSetAvailable   = "NewMachineSetAvailable"
)

// scenario is one step of the suite. A scenario that needs a failed one is
// failed at once rather than left to time out on a state that never comes.
type scenario struct {
	name  string
	needs []string
	run   func(*testing.T)
}

// TestIntegrationScenarios plays MCM's integration scenarios (ControllerTests
// in gardener/machine-controller-manager
// pkg/test/integration/common/framework.go) in order against machina-manager
// and machina-driver-virtualnode running as processes.
func TestIntegrationScenarios(t *testing.T) {
	setupStart := time.Now()
	s := setupSuite(t)
	t.Logf("setup (build, API server, driver, manager, classes) took %s", time.Since(setupStart).Round(100*time.Millisecond))

	const (
		s1  = "01_machine_creation_adds_one_node"
		s2  = "02_machine_deletion_removes_its_node"
		s3  = "03_deleting_a_missing_machine_keeps_nodes"
		s4  = "04_deployment_created_with_0_replicas_scaled_to_1"
		s4b = "04_deployment_reports_available_and_progressing"
		s5  = "05_deployment_scaled_up_to_6"
		s6  = "06_deployment_scaled_down_to_2_removes_4_nodes"
		s6b = "06_scale_down_did_not_freeze_the_machineset"
		s7  = "07_deployment_rolled_to_class_v2_with_4_replicas"
		s8  = "08_deployment_deletion_removes_its_nodes"
		s9  = "09_orphan_vm_is_collected"
	)
	scenarios := []scenario{
		{s1, nil, s.machineCreation},
		{s2, []string{s1}, s.machineDeletion},
		{s3, []string{s2}, s.missingMachineDeletion},
		{s4, nil, s.deploymentCreation},
		{s4b, []string{s4}, s.deploymentConditions},
		{s5, []string{s4}, s.deploymentScaleUp},
		{s6, []string{s5}, s.deploymentScaleDown},
		{s6b, []string{s6}, s.deploymentScaleDownNoFreeze},
		{s7, []string{s6}, s.deploymentRollout},
		{s8, []string{s4}, s.deploymentDeletion},
		// The orphan scenario deletes the deployment itself if it is still
		// there, as MCM's does, and so needs no earlier scenario.
		{s9, nil, s.orphanCollection},
	}

	passed := map[string]bool{}
	var summary strings.Builder
	for _, sc := range scenarios {
		start := time.Now()
		ok := t.Run(sc.name, func(t *testing.T) {
			for _, need := range sc.needs {
				if !passed[need] {
					t.Fatalf("not run: it builds on %s, which failed", need)
				}
			}
			// MCM's BeforeEachCheck: both processes are still running.
			require.NoError(t, s.processesRunning())
			sc.run(t)
		})
		passed[sc.name] = ok
		result := "ok"
		if !ok {
			result = "FAIL"
		}
		fmt.Fprintf(&summary, "\n  %-4s %6.1fs  %s", result, time.Since(start).Seconds(), sc.name)
	}
	t.Logf("scenarios:%s", summary.String())
}

// Scenario 1, "machine resource / creation": a Machine of class test-mc-v1
// adds one ready Node and becomes Running.
func (s *suite) machineCreation(t *testing.T) {
	s.machineInitialNodes = s.mustCountNodes(t).total
	m := &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: machineName},
		Spec:       v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Kind: "MachineClass", Name: classV1}},
	}
	require.NoError(t, s.c.Create(t.Context(), m))

	s.waitNodes(t, s.machineInitialNodes+1)
	s.eventually(t, "machine "+machineName+" Running with its node label", func(ctx context.Context) (bool, string, error) {
		got := &v1alpha1.Machine{}
		if err := s.c.Get(ctx, client.ObjectKeyFromObject(m), got); err != nil {
			return false, "", err
		}
		st := got.Status
		return st.CurrentStatus.Phase == v1alpha1.MachineRunning && got.Labels[v1alpha1.NodeLabelKey] == machineName,
			fmt.Sprintf("phase %q, node label %q, last operation %s/%s %q", st.CurrentStatus.Phase,
				got.Labels[v1alpha1.NodeLabelKey], st.LastOperation.Type, st.LastOperation.State, st.LastOperation.Description), nil
	})
}

// Scenario 2, "machine resource / deletion / when machines available":
// deleting the Machine removes it and its Node.
func (s *suite) machineDeletion(t *testing.T) {
	m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: machineName}}
	require.NoError(t, s.c.Delete(t.Context(), m))

	s.eventually(t, "machine "+machineName+" gone", func(ctx context.Context) (bool, string, error) {
		got := &v1alpha1.Machine{}
		err := s.c.Get(ctx, client.ObjectKeyFromObject(m), got)
		if apierrors.IsNotFound(err) {
			return true, "gone", nil
		}
		if err != nil {
			return false, "", err
		}
		return false, fmt.Sprintf("still there, phase %q, finalizers %v, last operation %q",
			got.Status.CurrentStatus.Phase, got.Finalizers, got.Status.LastOperation.Description), nil
	})
	s.waitNodes(t, s.machineInitialNodes)
}

// Scenario 3, "machine resource / deletion / when machines are not
// available": deleting a Machine that does not exist fails with NotFound and
// leaves the Nodes alone.
func (s *suite) missingMachineDeletion(t *testing.T) {
	ctx := t.Context()
	// MCM runs this check only when no machine exists.
	names, err := s.machineNames(ctx)
	require.NoError(t, err)
	require.Empty(t, names, "machines left over from the earlier scenarios")

	err = s.c.Delete(ctx, &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: dummyMachine}})
	require.Error(t, err)
	assert.True(t, apierrors.IsNotFound(err), "deleting %s: want NotFound, got %v", dummyMachine, err)
	assert.Equal(t, s.machineInitialNodes, s.mustCountNodes(t).total, "node count changed")
}

// Scenario 4, "machine deployment resource / creation with replicas=0,
// scale up with replicas=1": the deployment gets its MachineSet, then one
// machine, available once it has been Running for minReadySeconds, and one
// more Node is ready. The freeze event count recorded here is scenario 6's
// baseline. The conditions MCM checks here are deploymentConditions.
func (s *suite) deploymentCreation(t *testing.T) {
	s.deployInitialNodes = s.mustCountNodes(t).total
	require.NoError(t, s.c.Create(t.Context(), testDeployment()))

	s.eventually(t, "one MachineSet of "+deploymentName, func(ctx context.Context) (bool, string, error) {
		sets, err := s.testMachineSets(ctx)
		return len(sets) == 1, fmt.Sprintf("%d machine sets", len(sets)), err
	})

	s.patchDeployment(t, `{"spec":{"replicas":1}}`)

	// Availability must wait minReadySeconds from the moment the machine
	// became Running (its currentStatus.lastUpdateTime, which the API
	// stores to the second, rounded down: that only lengthens the measured
	// time, so the check cannot fail on rounding).
	s.waitDeployment(t, "availableReplicas 1", func(md *v1alpha1.MachineDeployment) bool {
		return md.Status.AvailableReplicas >= 1
	})
	seenAvailable := time.Now()
	machines, err := s.deploymentMachines(t.Context())
	require.NoError(t, err)
	require.Len(t, machines, 1, "machines of %s", deploymentName)
	running := machines[0].Status.CurrentStatus
	require.Equal(t, v1alpha1.MachineRunning, running.Phase, "machine %s", machines[0].Name)
	assert.GreaterOrEqual(t, seenAvailable.Sub(running.LastUpdateTime.Time), minReadySeconds*time.Second,
		"machine %s counted available before it was Running for minReadySeconds (Running since %s, available seen at %s)",
		machines[0].Name, running.LastUpdateTime.Format(time.RFC3339), seenAvailable.Format(time.RFC3339Nano))

	s.waitNodes(t, s.deployInitialNodes+1)

	s.freezeBaseline, err = s.freezeEvents(t.Context())
	require.NoError(t, err)
	t.Logf("freeze events before the scale-down: %v", s.freezeBaseline)
}

// Scenario 4, its status check: MCM expects exactly two conditions once the
// replica is available, Available (MinimumReplicasAvailable) and
// Progressing (NewMachineSetAvailable), on a deployment without
// progressDeadlineSeconds. It is a step of its own so that a deployment
// that scales right but reports otherwise does not hold up scenarios 5 to 8.
func (s *suite) deploymentConditions(t *testing.T) {
	// The conditions come from the same status computation as the counts
	// scenario 4 waited for: a short wait is enough.
	s.eventuallyWithin(t, 30*time.Second, "conditions Available/MinimumReplicasAvailable and Progressing/NewMachineSetAvailable, 1 available",
		func(ctx context.Context) (bool, string, error) {
			md, err := s.deployment(ctx)
			if err != nil {
				return false, "", err
			}
			available := deploymentCondition(md, v1alpha1.MachineDeploymentAvailable)
			progressing := deploymentCondition(md, v1alpha1.MachineDeploymentProgressing)
			// MCM's check: exactly these two conditions.
			done := len(md.Status.Conditions) == 2 &&
				available != nil && available.Status == v1alpha1.ConditionTrue && available.Reason == reasonMinimumReplicasAvailable &&
				progressing != nil && progressing.Status == v1alpha1.ConditionTrue && progressing.Reason == reasonNewMachineSetAvailable &&
				md.Status.AvailableReplicas == 1
			return done, describeDeployment(md), nil
		})
}

// testDeployment is MCM's test MachineDeployment: RollingUpdate with
// maxSurge 2 and maxUnavailable 1, selector test-label=test-label, class
// test-mc-v1, no replicas yet.
func testDeployment() *v1alpha1.MachineDeployment {
	labels := map[string]string{selectorKey: selectorValue}
	maxSurge, maxUnavailable := intstr.FromInt32(2), intstr.FromInt32(1)
	return &v1alpha1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: deploymentName},
		Spec: v1alpha1.MachineDeploymentSpec{
			Replicas:        0,
			MinReadySeconds: minReadySeconds,
			Selector:        &metav1.LabelSelector{MatchLabels: labels},
			Strategy: v1alpha1.MachineDeploymentStrategy{
				Type: v1alpha1.RollingUpdateMachineDeploymentStrategyType,
				RollingUpdate: &v1alpha1.RollingUpdateMachineDeployment{
					UpdateConfiguration: v1alpha1.UpdateConfiguration{MaxSurge: &maxSurge, MaxUnavailable: &maxUnavailable},
				},
			},
			Template: v1alpha1.MachineTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Kind: "MachineClass", Name: classV1}},
			},
		},
	}
}

// waitDeployment waits until the test deployment's status satisfies ok.
func (s *suite) waitDeployment(t *testing.T, what string, ok func(*v1alpha1.MachineDeployment) bool) {
	t.Helper()
	s.eventually(t, deploymentName+" "+what, func(ctx context.Context) (bool, string, error) {
		md, err := s.deployment(ctx)
		if err != nil {
			return false, "", err
		}
		return ok(md), describeDeployment(md), nil
	})
}

// Scenario 5, "scale-up with replicas=6": six available replicas, six more
// ready Nodes than before the deployment.
func (s *suite) deploymentScaleUp(t *testing.T) {
	s.patchDeployment(t, `{"spec":{"replicas":6}}`)
	s.waitDeployment(t, "availableReplicas 6", func(md *v1alpha1.MachineDeployment) bool {
		return md.Status.AvailableReplicas == 6
	})
	s.waitNodes(t, s.deployInitialNodes+6)
}

// Scenario 6, "scale-down with replicas=2", first part: four Nodes go.
func (s *suite) deploymentScaleDown(t *testing.T) {
	s.patchDeployment(t, `{"spec":{"replicas":2}}`)
	s.waitNodes(t, s.deployInitialNodes+2)
}

// Scenario 6, second part. MCM's scenario is "should freeze and unfreeze
// machineset temporarily": with replicas 2, maxSurge 2 and --safety-up 2
// the overshooting limit is 2+2+2 = 6, and MCM freezes the set for the six
// machines that exist when the deployment drops to 2, and unfreezes it once
// no more than 6-1 remain (one FrozeMachineSet, one UnfrozeMachineSet).
// machina deliberately does not: a scale-down is no overshoot, since the
// set's status still counts those machines (docs/safety.md, "Scale-downs do
// not freeze"). So no freeze event may follow scenario 4's baseline, and no
// set of the deployment may carry the freeze label, for ten overshoot
// periods after the scale-down.
func (s *suite) deploymentScaleDownNoFreeze(t *testing.T) {
	require.NotNil(t, s.freezeBaseline, "scenario 4 recorded no baseline")
	deadline := time.Now().Add(10 * overshootPeriod)
	for {
		counts, err := s.freezeEvents(t.Context())
		require.NoError(t, err)
		require.Equal(t, s.freezeBaseline, counts, "freeze events after the scale-down")
		sets, err := s.testMachineSets(t.Context())
		require.NoError(t, err)
		for _, ms := range sets {
			require.NotEqual(t, v1alpha1.FreezeValue, ms.Labels[v1alpha1.FreezeLabel], "machine set %s frozen", ms.Name)
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Scenario 7, "updation to v2 machine-class and replicas=4": a rolling
// update to test-mc-v2 while scaling to 4 ends with four updated and
// available replicas and four ready Nodes. MCM counts only; here the Nodes
// must also be the new class's, so that old Nodes cannot stand in for new
// ones.
func (s *suite) deploymentRollout(t *testing.T) {
	s.patchDeployment(t, fmt.Sprintf(`{"spec":{"replicas":4,"template":{"spec":{"class":{"name":%q}}}}}`, classV2))
	s.waitDeployment(t, "updatedReplicas 4", func(md *v1alpha1.MachineDeployment) bool {
		return md.Status.UpdatedReplicas == 4
	})
	s.waitDeployment(t, "availableReplicas 4", func(md *v1alpha1.MachineDeployment) bool {
		return md.Status.AvailableReplicas == 4
	})
	s.waitNodes(t, s.deployInitialNodes+4)
	s.eventually(t, "4 Nodes of class "+classV2+" and none of "+classV1, func(ctx context.Context) (bool, string, error) {
		byClass, err := s.nodesByClass(ctx)
		return byClass[classV2] == 4 && byClass[classV1] == 0, fmt.Sprint(byClass), err
	})
	machines, err := s.deploymentMachines(t.Context())
	require.NoError(t, err)
	require.Len(t, machines, 4)
	for _, m := range machines {
		assert.Equal(t, classV2, m.Spec.Class.Name, "class of machine %s", m.Name)
	}
}

// nodesByClass counts the Nodes per machine class label.
func (s *suite) nodesByClass(ctx context.Context) (map[string]int, error) {
	var nodes corev1.NodeList
	if err := s.c.List(ctx, &nodes); err != nil {
		return nil, err
	}
	byClass := map[string]int{}
	for _, n := range nodes.Items {
		byClass[n.Labels[labelNodeClass]]++
	}
	return byClass, nil
}

// Scenario 8, "machine deployment resource / deletion": deleting the
// deployment removes every Node it made and, at last, the deployment.
func (s *suite) deploymentDeletion(t *testing.T) {
	md := &v1alpha1.MachineDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: deploymentName}}
	require.NoError(t, s.c.Delete(t.Context(), md))
	s.waitNodes(t, s.deployInitialNodes)
	s.waitDeploymentGone(t)
}

// waitDeploymentGone waits until the test deployment and its machines are
// gone.
func (s *suite) waitDeploymentGone(t *testing.T) {
	t.Helper()
	s.eventually(t, deploymentName+" and its machines gone", func(ctx context.Context) (bool, string, error) {
		md, err := s.deployment(ctx)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return false, "", err
		default:
			return false, fmt.Sprintf("deployment still there (finalizers %v): %s", md.Finalizers, describeDeployment(md)), nil
		}
		machines, err := s.deploymentMachines(ctx)
		return len(machines) == 0, fmt.Sprintf("deployment gone, %d machines left", len(machines)), err
	})
}

// Scenario 9, "orphaned resources / when the hyperscaler resources are
// queried": a VM without a Machine (created here through the driver's API,
// as a lost create leaves one) is deleted by the manager's orphan
// collection, and the driver lists no VM of the test classes any more.
func (s *suite) orphanCollection(t *testing.T) {
	ctx := t.Context()
	// MCM's BeforeEach: the test deployment is gone first.
	err := s.c.Delete(ctx, &v1alpha1.MachineDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: deploymentName}})
	if !apierrors.IsNotFound(err) {
		require.NoError(t, err)
	}
	s.waitDeploymentGone(t)

	providerID, err := s.vms.createVM(ctx, orphanName, classV1)
	require.NoError(t, err)
	require.NotEmpty(t, providerID)
	vms, err := s.vms.list(ctx)
	require.NoError(t, err)
	require.True(t, slices.Contains(vms, classV1+"/"+orphanName), "the driver does not list the VM it just created: %v", vms)
	require.NoError(t, s.c.Get(ctx, client.ObjectKey{Name: orphanName}, &corev1.Node{}), "the orphan VM's Node")

	took := s.eventually(t, "no VM of "+classV1+" or "+classV2+" left, Node "+orphanName+" gone", func(ctx context.Context) (bool, string, error) {
		vms, err := s.vms.list(ctx)
		if err != nil {
			return false, "", err
		}
		node := &corev1.Node{}
		err = s.c.Get(ctx, client.ObjectKey{Name: orphanName}, node)
		nodeGone := apierrors.IsNotFound(err)
		if err != nil && !nodeGone {
			return false, "", err
		}
		state := fmt.Sprintf("VMs listed: %v", vms)
		if !nodeGone {
			state += fmt.Sprintf("; Node %s still there (deleting: %t, finalizers %v)", orphanName, node.DeletionTimestamp != nil, node.Finalizers)
		}
		return len(vms) == 0 && nodeGone, state, nil
	})
	t.Logf("orphan VM %s (%s) collected %s after its creation", orphanName, providerID, took.Round(100*time.Millisecond))
}
