package manifests_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/cmd/internal/manifests"
	"github.com/machina-io/machina/core/testenv"
)

// mcmDeploymentName is the Deployment Gardener's cluster-autoscaler looks
// up in its control namespace before every loop (mcm provider,
// checkMCMAvailableReplicas): without an available replica of it, the
// autoscaler suspends all scaling.
const mcmDeploymentName = "machine-controller-manager"

// TestAutoscalerOverlay: deploy/overlays/autoscaler is the virtualnode
// overlay with the manager's own Deployment named machine-controller-manager,
// so that the autoscaler finds the real manager and its availability; the
// pod, its admission, its metrics Service and every other object stay as
// they are.
func TestAutoscalerOverlay(t *testing.T) {
	objs := render(t, "deploy/overlays/autoscaler")
	virtualnode := render(t, "deploy/overlays/virtualnode")
	require.Len(t, objs, len(virtualnode), "the overlay adds and removes nothing")

	renamed := findObject(t, objs, "Deployment", namespace, mcmDeploymentName).DeepCopy()
	renamed.SetName(deploymentName)
	assert.Equal(t, findObject(t, virtualnode, "Deployment", namespace, deploymentName).Object, renamed.Object,
		"only the Deployment's name differs from the virtualnode overlay")
	for _, o := range objs {
		assert.False(t, o.GetKind() == "Deployment" && o.GetName() == deploymentName, "no Deployment %s is left", deploymentName)
	}

	env := testenv.Start(t, testenv.WithoutCRDs())
	ctx := t.Context()
	require.NoError(t, manifests.Apply(ctx, env.Client, objs, manifests.FieldOwner))
	dep := &appsv1.Deployment{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: mcmDeploymentName}, dep))
	checkPod(t, dep)
	checkMetricsService(t, env.Client, dep)
	checkRestrictedAdmission(t, env.Client, dep)
}
