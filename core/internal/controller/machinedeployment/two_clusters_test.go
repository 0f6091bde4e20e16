package machinedeployment_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/controllertest"
	"github.com/machina-io/machina/core/internal/controller/machinedeployment"
	"github.com/machina-io/machina/core/internal/controller/machineset"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/testenv"
)

// TestRolloutMarksNodesInTheTargetCluster runs the controllers with Machines
// in a control cluster and Nodes in a separate target cluster: the rollout
// marks and unmarks the target cluster's Nodes, and the control cluster has
// no Node at all.
func TestRolloutMarksNodesInTheTargetCluster(t *testing.T) {
	ctx := context.Background()
	control := testenv.Start(t)
	target := testenv.Start(t, testenv.WithoutCRDs())
	controllertest.StartManager(t, control, func(mgr ctrl.Manager) error {
		if err := (&machineset.Reconciler{}).SetupWithManager(mgr, setup.Env{Workers: 2}); err != nil {
			return err
		}
		return (&machinedeployment.Reconciler{Target: target.Client, Pods: target.Client, Options: machinedeployment.DefaultOptions()}).SetupWithManager(mgr, setup.Env{Workers: 2})
	})
	c := control.Client
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "two"}}
	require.NoError(t, c.Create(ctx, ns))
	j := &controllertest.Joiner{Client: c, Nodes: target.Client, Namespace: ns.Name}
	j.Start(t)

	d := newDeployment(ns.Name, "split", 2)
	require.NoError(t, c.Create(ctx, d))
	s := &suite{env: control, c: c}
	s.waitComplete(t, d)
	old := map[string]bool{}
	for _, m := range s.machines(t, ns.Name) {
		old[m.Name] = true
	}

	j.Pause()
	s.update(t, d, func(d *v1alpha1.MachineDeployment) { d.Spec.Template.Spec.Class.Name = "class-v2" })
	require.Eventually(t, func() bool {
		for name := range old {
			n := &corev1.Node{}
			if err := target.Client.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
				return false
			}
			if !hasRolloutTaint(n) || n.Annotations[v1alpha1.ClusterAutoscalerScaleDownDisabledAnnotation] != "true" {
				return false
			}
		}
		return true
	}, waitTimeout, poll, "old nodes in the target cluster were not marked")
	j.Resume()
	s.waitComplete(t, d)

	require.Eventually(t, func() bool {
		nodes := &corev1.NodeList{}
		require.NoError(t, target.Client.List(ctx, nodes))
		if len(nodes.Items) != 2 {
			return false
		}
		for _, n := range nodes.Items {
			if old[n.Name] || hasRolloutTaint(&n) || n.Annotations[v1alpha1.ClusterAutoscalerScaleDownDisabledByMCMAnnotation] != "" {
				return false
			}
		}
		return true
	}, 30*time.Second, poll, "rollout marks remained in the target cluster")
	controlNodes := &corev1.NodeList{}
	require.NoError(t, c.List(ctx, controlNodes))
	assert.Empty(t, controlNodes.Items, "nothing may touch Nodes of the control cluster")
}
