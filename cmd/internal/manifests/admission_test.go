package manifests_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/testenv"
)

// asManager returns a client acting as the manager's ServiceAccount
// (impersonated by the admin), so that requests pass through RBAC and the
// admission policies the overlay ships.
func asManager(t *testing.T, env *testenv.Env) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: serviceAccountUser.User, Groups: serviceAccountUser.Groups}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	return c
}

// checkManagerAdmission checks, with the manager's identity against the
// API server, what the admission policies of deploy/base/rbac add to RBAC:
// in kube-system only bootstrap tokens are created and deleted; in its
// namespace only its election Lease is created, and a Secret's update
// changes its finalizers and nothing else.
func checkManagerAdmission(t *testing.T, env *testenv.Env, virtualnode bool) {
	ctx := t.Context()
	admin, manager := env.Client, asManager(t, env)
	refused := func(err error, what, why string) {
		t.Helper()
		require.Error(t, err, what)
		assert.True(t, apierrors.IsForbidden(err), "%s: %v", what, err)
		assert.Contains(t, err.Error(), why, what)
	}
	opaque := func(ns, name string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{"key": []byte("value")}}
	}
	// The API server loads new policies in the background: wait until
	// both refuse (dry runs, which change nothing).
	require.Eventually(t, func() bool {
		err := manager.Create(ctx, opaque("kube-system", "wait-for-policy"), client.DryRunAll)
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "only bootstrap tokens")
	}, time.Minute, 50*time.Millisecond, "the kube-system policy must come into force")
	require.Eventually(t, func() bool {
		err := manager.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "wait-for-policy"}}, client.DryRunAll)
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "only the Lease machina-manager")
	}, time.Minute, 50*time.Millisecond, "the namespace policy must come into force")

	// kube-system: a bootstrap token, created and deleted.
	token := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "bootstrap-token-abcdef"},
		Type:       corev1.SecretTypeBootstrapToken,
		Data:       map[string][]byte{"token-id": []byte("abcdef"), "token-secret": []byte("0123456789abcdef")},
	}
	require.NoError(t, manager.Create(ctx, token))
	require.NoError(t, manager.Delete(ctx, token))
	// Anything else there: refused.
	refused(manager.Create(ctx, opaque("kube-system", "bootstrap-token-opaque1")), "an Opaque Secret named like a token", "only bootstrap tokens")
	disguised := token.DeepCopy()
	disguised.Name = "cloud-credentials"
	refused(manager.Create(ctx, disguised), "a bootstrap token not named bootstrap-token-", "only bootstrap tokens")
	precious := opaque("kube-system", "cloud-credentials")
	require.NoError(t, admin.Create(ctx, precious))
	refused(manager.Delete(ctx, precious), "deleting another Secret of kube-system", "only bootstrap tokens")
	refused(manager.Patch(ctx, precious, client.RawPatch(types.MergePatchType, []byte(`{"data":{"key":"c3RvbGVu"}}`))),
		"updating a Secret of kube-system", "") // RBAC refuses it first

	// Its namespace: the election Lease, and no other.
	require.NoError(t, manager.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "machina-manager"}}))
	refused(manager.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "someone-else"}}),
		"another Lease", "only the Lease machina-manager")
	if virtualnode {
		// The virtualnode driver's Node Leases are not the policy's business.
		require.NoError(t, manager.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-node-lease", Name: "node-1"}}))
	}

	// A class's Secret: the finalizer comes and goes, the contents stay.
	classSecret := opaque(namespace, "class-credentials")
	require.NoError(t, admin.Create(ctx, classSecret))
	require.NoError(t, manager.Patch(ctx, classSecret, client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"finalizers":["machine.sapcloud.io/machine-controller"]}}`))))
	require.NoError(t, manager.Patch(ctx, classSecret, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))))
	for what, patch := range map[string]string{
		"data":        `{"data":{"key":"c3RvbGVu"}}`,
		"labels":      `{"metadata":{"labels":{"a":"b"}}}`,
		"annotations": `{"metadata":{"annotations":{"a":"b"}}}`,
	} {
		refused(manager.Patch(ctx, classSecret, client.RawPatch(types.MergePatchType, []byte(patch))),
			"changing a Secret's "+what, "changes only the finalizers of Secret "+namespace+"/class-credentials")
	}
	got := &corev1.Secret{}
	require.NoError(t, admin.Get(ctx, client.ObjectKeyFromObject(classSecret), got))
	assert.Equal(t, classSecret.Data, got.Data, "the Secret's data is the user's")
}
