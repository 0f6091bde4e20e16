package secret_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/controllertest"
	"github.com/machina-io/machina/core/internal/controller/secret"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/testenv"
)

func TestSecretController(t *testing.T) {
	env := testenv.Start(t)
	mgr := controllertest.StartManager(t, env, func(mgr ctrl.Manager) error {
		return (&secret.Reconciler{}).SetupWithManager(mgr, setup.Env{Workers: 2})
	})
	c := env.Client

	t.Run("secrets of a class get the finalizer, others do not", func(t *testing.T) {
		ctx := t.Context()
		ns := controllertest.Namespace(t, c, "secret")
		userData, creds, unrelated := newSecret(ns, "user-data"), newSecret(ns, "creds"), newSecret(ns, "unrelated")
		for _, s := range []*corev1.Secret{userData, creds, unrelated} {
			require.NoError(t, c.Create(ctx, s))
		}
		class := newClass(ns, "c1", "user-data", "creds")
		require.NoError(t, c.Create(ctx, class))

		controllertest.RequireFinalizer(t, c, userData, v1alpha1.SecretFinalizer, true)
		controllertest.RequireFinalizer(t, c, creds, v1alpha1.SecretFinalizer, true)
		// The unrelated secret is reconciled too (it was created), so by
		// the time the others have their finalizer it would have one if the
		// controller were wrong; check it stays without for a while.
		controllertest.RequireFinalizerFor(t, c, unrelated, v1alpha1.SecretFinalizer, false, time.Second)
	})

	t.Run("a secret created after its class gets the finalizer", func(t *testing.T) {
		ctx := t.Context()
		ns := controllertest.Namespace(t, c, "secret")
		require.NoError(t, c.Create(ctx, newClass(ns, "early", "late", "")))
		late := newSecret(ns, "late")
		require.NoError(t, c.Create(ctx, late))
		controllertest.RequireFinalizer(t, c, late, v1alpha1.SecretFinalizer, true)
	})

	t.Run("finalizer leaves when the last class lets go", func(t *testing.T) {
		ctx := t.Context()
		ns := controllertest.Namespace(t, c, "secret")
		shared := newSecret(ns, "shared")
		require.NoError(t, c.Create(ctx, shared))
		a, b := newClass(ns, "a", "shared", ""), newClass(ns, "b", "", "shared")
		require.NoError(t, c.Create(ctx, a))
		require.NoError(t, c.Create(ctx, b))
		controllertest.RequireFinalizer(t, c, shared, v1alpha1.SecretFinalizer, true)
		controllertest.WaitCached(t, mgr, a, b)

		// a points elsewhere: b still refers to the secret.
		patch := client.MergeFrom(a.DeepCopy())
		a.SecretRef.Name = "other"
		require.NoError(t, c.Patch(ctx, a, patch))
		controllertest.RequireFinalizerFor(t, c, shared, v1alpha1.SecretFinalizer, true, time.Second)

		// b is deleted (it has no finalizer here: no class controller runs).
		require.NoError(t, c.Delete(ctx, b))
		controllertest.RequireFinalizer(t, c, shared, v1alpha1.SecretFinalizer, false)
	})

	t.Run("deleting a referenced secret is held and reported", func(t *testing.T) {
		ctx := t.Context()
		ns := controllertest.Namespace(t, c, "secret")
		held := newSecret(ns, "held")
		require.NoError(t, c.Create(ctx, held))
		class := newClass(ns, "holder", "held", "")
		require.NoError(t, c.Create(ctx, class))
		controllertest.RequireFinalizer(t, c, held, v1alpha1.SecretFinalizer, true)

		require.NoError(t, c.Delete(ctx, held))
		controllertest.RequireEvent(t, c, held, secret.ReasonDeletionBlocked, "MachineClass "+ns+"/holder")
		got := &corev1.Secret{}
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(held), got))
		assert.False(t, got.DeletionTimestamp.IsZero())

		require.NoError(t, c.Delete(ctx, class))
		controllertest.RequireGone(t, c, held)
	})
}

func TestSecretsOfClass(t *testing.T) {
	class := &v1alpha1.MachineClass{
		ObjectMeta:           metav1.ObjectMeta{Namespace: "ns", Name: "c"},
		SecretRef:            &corev1.SecretReference{Name: "s"},
		CredentialsSecretRef: &corev1.SecretReference{Namespace: "ns", Name: "s"},
	}
	assert.Equal(t, []types.NamespacedName{{Namespace: "ns", Name: "s"}}, secret.SecretsOfClass(class))

	class.CredentialsSecretRef = &corev1.SecretReference{Namespace: "other", Name: "creds"}
	assert.Equal(t, []types.NamespacedName{{Namespace: "ns", Name: "s"}, {Namespace: "other", Name: "creds"}},
		secret.SecretsOfClass(class))

	class.SecretRef, class.CredentialsSecretRef = nil, nil
	assert.Empty(t, secret.SecretsOfClass(class))
}

func newSecret(ns, name string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Data:       map[string][]byte{"userData": []byte("#cloud-config")},
	}
}

// newClass returns a class with the given secretRef and credentialsSecretRef
// ("" for none).
func newClass(ns, name, secretRef, credentialsRef string) *v1alpha1.MachineClass {
	class := &v1alpha1.MachineClass{
		ObjectMeta:   metav1.ObjectMeta{Namespace: ns, Name: name},
		ProviderSpec: runtime.RawExtension{Raw: []byte(`{"size":"small"}`)},
	}
	if secretRef != "" {
		class.SecretRef = &corev1.SecretReference{Namespace: ns, Name: secretRef}
	}
	if credentialsRef != "" {
		// No namespace: the class's own.
		class.CredentialsSecretRef = &corev1.SecretReference{Name: credentialsRef}
	}
	return class
}
