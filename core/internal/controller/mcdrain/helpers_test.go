package mcdrain_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/internal/controller/controllertest"
	"github.com/machina-io/machina/core/internal/controller/mcdrain"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/testenv"
)

// Handshake keys, spelled out as an agent written against the wire
// protocol would.
const (
	keyCurrent     = "machineconfiguration.openshift.io/currentConfig"
	keyDesired     = "machineconfiguration.openshift.io/desiredConfig"
	keyDrain       = "machineconfiguration.openshift.io/desiredDrain"
	keyLastApplied = "machineconfiguration.openshift.io/lastAppliedDrain"
)

// startController runs the drain controller on env (one cluster for the
// Nodes, machines and MachineDrainRules) until the test ends.
func startController(t *testing.T, env *testenv.Env) {
	t.Helper()
	controllertest.StartManager(t, env, func(mgr ctrl.Manager) error {
		return (&mcdrain.Reconciler{}).SetupWithManager(mgr, setup.Env{Target: mgr, Workers: 2})
	})
}

// createNodes creates n Ready Nodes named <prefix>-0.. with labels.
func createNodes(t *testing.T, c client.Client, prefix string, n int, labels map[string]string) []string {
	t.Helper()
	var names []string
	for i := range n {
		name := fmt.Sprintf("%s-%d", prefix, i)
		require.NoError(t, c.Create(t.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}))
		require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			node := controllertest.GetNode(t, c, name)
			now := metav1.Now()
			node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "Test",
				LastHeartbeatTime: now, LastTransitionTime: now}}
			return c.Status().Update(t.Context(), node)
		}))
		names = append(names, name)
	}
	return names
}
