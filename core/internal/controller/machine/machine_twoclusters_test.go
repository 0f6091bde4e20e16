package machine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/testenv"
	"github.com/machina-io/machina/drivers/inmemory"
)

// Machines in one cluster, Nodes and pods in another: the whole lifecycle
// with a drain.
func TestMachineControllerTwoClusters(t *testing.T) {
	control := testenv.Start(t)
	target := testenv.Start(t, testenv.WithoutCRDs())
	w := newWorld(t, control, target, inmemory.Options{})
	require.NoError(t, target.Client.Create(w.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.ns}}))
	w.class("small", map[string]string{"userData": "token=<<BOOTSTRAP_TOKEN>>"})
	w.start()
	w.machine("m1", "small", func(m *v1alpha1.Machine) {
		m.Spec.NodeTemplateSpec.Labels = map[string]string{"pool": "two-clusters"}
	})
	w.waitPhase("m1", v1alpha1.MachineRunning, waitLong)

	node := &corev1.Node{}
	require.NoError(t, target.Client.Get(w.ctx, client.ObjectKey{Name: "m1"}, node))
	require.Eventually(t, func() bool {
		require.NoError(t, target.Client.Get(w.ctx, client.ObjectKey{Name: "m1"}, node))
		return node.Labels["pool"] == "two-clusters"
	}, waitLong, 50*time.Millisecond)
	assert.True(t, apierrors.IsNotFound(control.Client.Get(w.ctx, client.ObjectKey{Name: "m1"}, &corev1.Node{})),
		"no Node in the control cluster")
	assert.Contains(t, string(w.drv.createRequest().GetUserData()), "token=")

	runningPod(t, w.ctx, target.Client, w.ns, "web-1", "m1", map[string]string{"app": "web"})
	w.delete("m1")
	w.waitGone("m1", waitLong)
	w.rec.assertStepsFollow(t, "m1", allSteps)
	assert.True(t, gone(t, w, target.Client, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "m1"}}))
	assert.True(t, gone(t, w, target.Client, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "web-1"}}))
	assert.Empty(t, w.mem.VMs())
}
