package nodepatch_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/cmd/internal/manifests"
	"github.com/machina-io/machina/cmd/machina-node-agent/internal/nodepatch"
	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/testenv"
)

// agentUser is the agent's ServiceAccount as the API server sees it.
const agentUser = "system:serviceaccount:machina-node-agent:machina-node-agent"

// nodeNameExtra is the user extra the API server fills from a ServiceAccount
// token bound to a pod on a Node.
const nodeNameExtra = "authentication.kubernetes.io/node-name"

// agentOf returns a client that acts as the agent of node: the agent's
// ServiceAccount with the node name a pod-bound token carries (impersonated
// by the admin, as the API server would fill it in from the token). An
// empty node is a token without a node name.
func agentOf(t *testing.T, env *testenv.Env, node string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: agentUser,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:machina-node-agent", "system:authenticated"},
	}
	if node != "" {
		cfg.Impersonate.Extra = map[string][]string{nodeNameExtra: {node}}
	}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	return c
}

// TestAgentChangesOnlyItsOwnNode applies deploy/node-agent (RBAC and the
// ValidatingAdmissionPolicy) to a real API server and checks, with two
// agents' identities, that each reports on its own Node with the
// protocol's patches and can change nothing on the other Node, and nothing
// outside the protocol on its own.
func TestAgentChangesOnlyItsOwnNode(t *testing.T) {
	root, err := manifests.RepoRoot(".")
	require.NoError(t, err)
	objs, err := manifests.Render(root + "/deploy/node-agent")
	require.NoError(t, err)
	require.NotEmpty(t, manifests.OfKinds(objs, "ValidatingAdmissionPolicy"), "deploy/node-agent ships the policy")
	env := testenv.Start(t, testenv.WithoutCRDs())
	ctx := t.Context()
	require.NoError(t, manifests.Apply(ctx, env.Client, objs, manifests.FieldOwner))

	for _, name := range []string{"node-a", "node-b"} {
		require.NoError(t, env.Client.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name:   name,
			Labels: map[string]string{"kubernetes.io/hostname": name},
			Annotations: map[string]string{
				mcv1.DesiredConfigAnnotation:      "rendered-worker-1",
				mcv1.CurrentConfigAnnotation:      "rendered-worker-0",
				v1alpha1.AnnotationKeyNodeDesired: "web-1",
			},
		}}))
	}
	agentA, agentB := agentOf(t, env, "node-a"), agentOf(t, env, "node-b")

	// The API server loads a new policy in the background: wait until it
	// refuses agent A's dry-run report on node B.
	report := []byte(`{"metadata":{"annotations":{"` + mcv1.StateAnnotation + `":"Working"}}}`)
	require.Eventually(t, func() bool {
		err := agentA.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}},
			client.RawPatch(types.MergePatchType, report), client.DryRunAll)
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "may not change node node-b")
	}, time.Minute, 50*time.Millisecond, "the policy must come into force")

	// The protocol's reports, as the agent sends them (nodepatch.Send,
	// guarded by the desired annotations).
	mcoReport := []nodepatch.Op{
		{Op: "add", Path: nodepatch.AnnotationPath(mcv1.StateAnnotation), Value: mcv1.MachineConfigStateWorking},
		{Op: "add", Path: nodepatch.AnnotationPath(mcv1.ReasonAnnotation), Value: ""},
		{Op: "add", Path: nodepatch.AnnotationPath(mcv1.DesiredDrainAnnotation), Value: mcv1.DrainRequestPrefix + "rendered-worker-1"},
		{Op: "add", Path: nodepatch.AnnotationPath(mcv1.PostConfigActionAnnotation), Value: mcv1.PostConfigActionRebooting},
		{Op: "add", Path: nodepatch.AnnotationPath(mcv1.CurrentConfigAnnotation), Value: "rendered-worker-1"},
		{Op: "add", Path: nodepatch.AnnotationPath(mcv1.LastActionsAnnotation), Value: "drain, reboot"},
	}
	inplaceReport := []nodepatch.Op{
		{Op: "add", Path: nodepatch.LabelPath(v1alpha1.LabelKeyNodeUpdateResult), Value: v1alpha1.LabelValueNodeUpdateFailed},
		{Op: "add", Path: nodepatch.AnnotationPath(v1alpha1.AnnotationKeyMachineUpdateFailedReason), Value: "disk full"},
		{Op: "add", Path: nodepatch.AnnotationPath(v1alpha1.AnnotationKeyNodeCurrent), Value: "web-1"},
	}
	send := func(c client.Client, node string, key, want string, ops []nodepatch.Op) error {
		return nodepatch.Send(ctx, c, node, key, want, ops)
	}

	// Each agent on its own Node: allowed.
	require.NoError(t, send(agentA, "node-a", mcv1.DesiredConfigAnnotation, "rendered-worker-1", mcoReport))
	require.NoError(t, send(agentA, "node-a", v1alpha1.AnnotationKeyNodeDesired, "web-1", inplaceReport))
	require.NoError(t, send(agentB, "node-b", mcv1.DesiredConfigAnnotation, "rendered-worker-1",
		[]nodepatch.Op{{Op: "add", Path: nodepatch.AnnotationPath(mcv1.StateAnnotation), Value: mcv1.MachineConfigStateDone}}))
	// Removing its own annotation (the failure reason once it succeeded).
	require.NoError(t, send(agentA, "node-a", v1alpha1.AnnotationKeyNodeDesired, "web-1",
		[]nodepatch.Op{{Op: "remove", Path: nodepatch.AnnotationPath(v1alpha1.AnnotationKeyMachineUpdateFailedReason)}}))

	before := &corev1.Node{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: "node-b"}, before))

	// Agent A on node B: the same reports are refused, a drain request
	// first of all.
	forbidden := func(err error, what string, why string) {
		t.Helper()
		require.Error(t, err, what)
		assert.True(t, apierrors.IsForbidden(err), "%s: %v", what, err)
		assert.Contains(t, err.Error(), why, what)
	}
	forbidden(send(agentA, "node-b", mcv1.DesiredConfigAnnotation, "rendered-worker-1",
		[]nodepatch.Op{{Op: "add", Path: nodepatch.AnnotationPath(mcv1.DesiredDrainAnnotation), Value: mcv1.DrainRequestPrefix + "rendered-worker-1"}}),
		"A asks for a drain of B", "the node agent of node node-a may not change node node-b")
	forbidden(send(agentA, "node-b", mcv1.DesiredConfigAnnotation, "rendered-worker-1", mcoReport), "A reports on B", "may not change node node-b")
	forbidden(send(agentA, "node-b", v1alpha1.AnnotationKeyNodeDesired, "web-1", inplaceReport), "A reports in place on B", "may not change node node-b")
	forbidden(agentA.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}},
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"unschedulable":true}}`))), "A cordons B", "may not change node node-b")
	after := &corev1.Node{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: "node-b"}, after))
	assert.Equal(t, before.ResourceVersion, after.ResourceVersion, "node B is untouched")

	// Agent A on its own node, outside the protocol.
	for _, tc := range []struct{ what, patch, why string }{
		{"cordon", `{"spec":{"unschedulable":true}}`, "spec"},
		{"taint", `{"spec":{"taints":[{"key":"evil","effect":"NoSchedule"}]}}`, "spec"},
		{"pick its own configuration", `{"metadata":{"annotations":{"` + mcv1.DesiredConfigAnnotation + `":"rendered-evil"}}}`, "only the annotations"},
		{"answer its own drain request", `{"metadata":{"annotations":{"` + mcv1.LastAppliedDrainAnnotation + `":"drain-rendered-worker-1"}}}`, "only the annotations"},
		{"pick its own in-place target", `{"metadata":{"annotations":{"` + v1alpha1.AnnotationKeyNodeDesired + `":"evil"}}}`, "only the annotations"},
		{"add a label", `{"metadata":{"labels":{"node-role.kubernetes.io/control-plane":""}}}`, "only the label"},
		{"remove a label", `{"metadata":{"labels":{"kubernetes.io/hostname":null}}}`, "only the label"},
		{"add a finalizer", `{"metadata":{"finalizers":["example.com/evil"]}}`, "finalizers"},
	} {
		forbidden(agentA.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}},
			client.RawPatch(types.MergePatchType, []byte(tc.patch))), "A on A: "+tc.what, tc.why)
	}
	forbidden(agentA.Status().Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}},
		client.RawPatch(types.MergePatchType, []byte(`{"status":{"conditions":[{"type":"Ready","status":"False"}]}}`))),
		"A writes its node's status", "")
	forbidden(agentA.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}), "A deletes its node", "")

	// The agent's ServiceAccount without a node name (a token not bound to
	// a pod on a Node) may change no Node.
	forbidden(send(agentOf(t, env, ""), "node-a", mcv1.DesiredConfigAnnotation, "rendered-worker-1", mcoReport),
		"an unbound token", "carries no node name")

	// Other identities are not the policy's business: the admin (and the
	// manager) still cordon and label.
	require.NoError(t, env.Client.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}},
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"unschedulable":true},"metadata":{"labels":{"team":"x"}}}`))))
}
