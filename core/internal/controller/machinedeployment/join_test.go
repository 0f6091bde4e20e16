package machinedeployment_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/controllertest"
	"github.com/machina-io/machina/core/internal/controller/machine"
	"github.com/machina-io/machina/core/internal/controller/machinedeployment"
	"github.com/machina-io/machina/core/internal/controller/machineset"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/testenv"
	"github.com/machina-io/machina/drivers/inmemory"
	"github.com/machina-io/machina/drivers/inmemory/inmemorytest"
)

// TestMachineDeploymentWithMachineController runs the MachineDeployment and
// MachineSet controllers together with the Machine controller, the in-memory
// driver on a real Unix socket, and a test kubelet that registers a Ready
// Node for every machine the Machine controller created a VM for: machines
// really join, roll and go away.
func TestMachineDeploymentWithMachineController(t *testing.T) {
	ctx := context.Background()
	env := testenv.Start(t)
	c := env.Client
	vms, endpoint := inmemorytest.Serve(t, inmemory.Options{})
	driverClient := controllertest.ConnectDriver(t, endpoint)
	controllertest.StartManager(t, env, func(mgr ctrl.Manager) error {
		if err := (&machine.Reconciler{
			Driver: driverClient,
			Options: machine.Options{
				ShortRetry:        200 * time.Millisecond,
				MediumRetry:       time.Second,
				LongRetry:         2 * time.Second,
				DrainPollInterval: 200 * time.Millisecond,
			},
		}).SetupWithManager(mgr, setup.Env{Target: mgr}); err != nil {
			return err
		}
		if err := (&machineset.Reconciler{}).SetupWithManager(mgr, setup.Env{Workers: 4}); err != nil {
			return err
		}
		return (&machinedeployment.Reconciler{Target: mgr.GetClient(), Pods: mgr.GetAPIReader(), Options: machinedeployment.DefaultOptions()}).SetupWithManager(mgr, setup.Env{Workers: 4})
	})

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "join"}}
	require.NoError(t, c.Create(ctx, ns))
	for _, name := range []string{"class-v1", "class-v2"} {
		require.NoError(t, c.Create(ctx, &v1alpha1.MachineClass{
			ObjectMeta:   metav1.ObjectMeta{Namespace: ns.Name, Name: name},
			Provider:     "inmemory",
			ProviderSpec: runtime.RawExtension{Raw: []byte(`{"capacity":{"cpu":"2"}}`)},
		}))
	}
	startKubelet(t, c, ns.Name)

	d := newDeployment(ns.Name, "workers", 3)
	surge, unavailable := intstr.FromInt32(1), intstr.FromInt32(0)
	d.Spec.Strategy.RollingUpdate = &v1alpha1.RollingUpdateMachineDeployment{}
	d.Spec.Strategy.RollingUpdate.MaxSurge = &surge
	d.Spec.Strategy.RollingUpdate.MaxUnavailable = &unavailable
	require.NoError(t, c.Create(ctx, d))

	vmNames := func() map[string]bool {
		out := map[string]bool{}
		for _, vm := range vms.VMs() {
			out[vm.Name] = true
		}
		return out
	}
	runningMachines := func() []v1alpha1.Machine {
		list := &v1alpha1.MachineList{}
		require.NoError(t, c.List(ctx, list, client.InNamespace(ns.Name)))
		var out []v1alpha1.Machine
		for _, m := range list.Items {
			if m.DeletionTimestamp == nil && m.Status.CurrentStatus.Phase == v1alpha1.MachineRunning {
				out = append(out, m)
			}
		}
		return out
	}
	// waitJoined waits until the deployment is complete with n Running
	// machines, each with a VM and a Node, and no other VM exists.
	waitJoined := func(n int, class string) {
		t.Helper()
		require.Eventually(t, func() bool {
			cur := &v1alpha1.MachineDeployment{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(d), cur); err != nil {
				return false
			}
			st := cur.Status
			if st.ObservedGeneration != cur.Generation || st.UpdatedReplicas != int32(n) || st.AvailableReplicas != int32(n) || st.Replicas != int32(n) {
				return false
			}
			running := runningMachines()
			vms := vmNames()
			if len(running) != n || len(vms) != n {
				return false
			}
			for _, m := range running {
				node := &corev1.Node{}
				if m.Spec.Class.Name != class || !vms[m.Name] || m.Spec.ProviderID == "" ||
					c.Get(ctx, client.ObjectKey{Name: m.Labels[v1alpha1.NodeLabelKey]}, node) != nil {
					return false
				}
			}
			return true
		}, 2*time.Minute, 100*time.Millisecond, "machines did not join (%d %s)", n, class)
	}
	waitJoined(3, "class-v1")

	obs := controllertest.ObserveMachines(t, env.Config, env.Scheme, ns.Name)
	require.Eventually(t, func() bool { return obs.Current().Count(running) == 3 }, waitTimeout, poll)
	mark := obs.Mark()
	old := vmNames()
	s := &suite{env: env, c: c}
	s.update(t, d, func(d *v1alpha1.MachineDeployment) { d.Spec.Template.Spec.Class.Name = "class-v2" })
	waitJoined(3, "class-v2")
	for name := range vmNames() {
		assert.False(t, old[name], "VM %s of an old machine survived the rollout", name)
	}
	for i, st := range obs.StatesSince(mark) {
		assert.LessOrEqual(t, st.Count(live), 4, "state %d: more than replicas+maxSurge machines", i)
		assert.GreaterOrEqual(t, st.Count(running), 3, "state %d: fewer than replicas-maxUnavailable Running", i)
	}

	s.update(t, d, func(d *v1alpha1.MachineDeployment) { d.Spec.Replicas = 1 })
	waitJoined(1, "class-v2")
	require.Eventually(t, func() bool {
		nodes := &corev1.NodeList{}
		require.NoError(t, c.List(ctx, nodes))
		return len(nodes.Items) == 1
	}, waitTimeout, poll, "nodes of deleted machines were not deleted")
}

// startKubelet plays the kubelets of the target cluster: for every machine
// that names a node (the Machine controller sets the label once the VM
// exists) and is not being deleted, it registers that Node and keeps it
// Ready.
func startKubelet(t *testing.T, c client.Client, namespace string) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			list := &v1alpha1.MachineList{}
			if err := c.List(ctx, list, client.InNamespace(namespace)); err != nil {
				continue
			}
			for _, m := range list.Items {
				name := m.Labels[v1alpha1.NodeLabelKey]
				if name == "" || m.DeletionTimestamp != nil {
					continue
				}
				registerReadyNode(ctx, c, name)
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

func registerReadyNode(ctx context.Context, c client.Client, name string) {
	node := &corev1.Node{}
	err := c.Get(ctx, client.ObjectKey{Name: name}, node)
	if apierrors.IsNotFound(err) {
		node = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := c.Create(ctx, node); err != nil {
			return
		}
	} else if err != nil || node.DeletionTimestamp != nil {
		return
	}
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
			return
		}
	}
	orig := node.DeepCopy()
	now := metav1.Now()
	node.Status.Conditions = []corev1.NodeCondition{{
		Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		Message: "test kubelet", LastHeartbeatTime: now, LastTransitionTime: now,
	}}
	_ = c.Status().Patch(ctx, node, client.MergeFrom(orig))
}
