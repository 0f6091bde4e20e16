package secret_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/secret"
	"github.com/machina-io/machina/core/testenv"
)

const (
	waitFor = 30 * time.Second
	tick    = 50 * time.Millisecond
)

func TestSecretController(t *testing.T) {
	env := testenv.Start(t)
	mgr := startManager(t, env)
	c := env.Client

	t.Run("secrets of a class get the finalizer, others do not", func(t *testing.T) {
		ctx := t.Context()
		ns := namespace(t, c)
		userData, creds, unrelated := newSecret(ns, "user-data"), newSecret(ns, "creds"), newSecret(ns, "unrelated")
		for _, s := range []*corev1.Secret{userData, creds, unrelated} {
			require.NoError(t, c.Create(ctx, s))
		}
		class := newClass(ns, "c1", "user-data", "creds")
		require.NoError(t, c.Create(ctx, class))

		requireFinalizer(t, c, userData, true)
		requireFinalizer(t, c, creds, true)
		// The unrelated secret is reconciled too (it was created), so by
		// the time the others have their finalizer it would have one if the
		// controller were wrong; check it stays without for a while.
		requireNoFinalizerFor(t, c, unrelated, time.Second)
	})

	t.Run("a secret created after its class gets the finalizer", func(t *testing.T) {
		ctx := t.Context()
		ns := namespace(t, c)
		require.NoError(t, c.Create(ctx, newClass(ns, "early", "late", "")))
		late := newSecret(ns, "late")
		require.NoError(t, c.Create(ctx, late))
		requireFinalizer(t, c, late, true)
	})

	t.Run("finalizer leaves when the last class lets go", func(t *testing.T) {
		ctx := t.Context()
		ns := namespace(t, c)
		shared := newSecret(ns, "shared")
		require.NoError(t, c.Create(ctx, shared))
		a, b := newClass(ns, "a", "shared", ""), newClass(ns, "b", "", "shared")
		require.NoError(t, c.Create(ctx, a))
		require.NoError(t, c.Create(ctx, b))
		requireFinalizer(t, c, shared, true)
		waitCached(t, mgr, a, b)

		// a points elsewhere: b still refers to the secret.
		patch := client.MergeFrom(a.DeepCopy())
		a.SecretRef.Name = "other"
		require.NoError(t, c.Patch(ctx, a, patch))
		requireFinalizerFor(t, c, shared, time.Second)

		// b is deleted (it has no finalizer here: no class controller runs).
		require.NoError(t, c.Delete(ctx, b))
		requireFinalizer(t, c, shared, false)
	})

	t.Run("deleting a referenced secret is held and reported", func(t *testing.T) {
		ctx := t.Context()
		ns := namespace(t, c)
		held := newSecret(ns, "held")
		require.NoError(t, c.Create(ctx, held))
		class := newClass(ns, "holder", "held", "")
		require.NoError(t, c.Create(ctx, class))
		requireFinalizer(t, c, held, true)

		require.NoError(t, c.Delete(ctx, held))
		requireEvent(t, c, held, secret.ReasonDeletionBlocked, "MachineClass "+ns+"/holder")
		got := &corev1.Secret{}
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(held), got))
		assert.False(t, got.DeletionTimestamp.IsZero())

		require.NoError(t, c.Delete(ctx, class))
		require.Eventually(t, func() bool {
			return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(held), &corev1.Secret{}))
		}, waitFor, tick, "secret was never released")
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

func startManager(t *testing.T, env *testenv.Env) ctrl.Manager {
	t.Helper()
	skip := true
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: &skip},
	})
	require.NoError(t, err)
	require.NoError(t, (&secret.Reconciler{}).SetupWithManager(mgr, 2))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	require.True(t, mgr.GetCache().WaitForCacheSync(ctx))
	return mgr
}

var nsCounter int

func namespace(t *testing.T, c client.Client) string {
	t.Helper()
	nsCounter++
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("secret-%d", nsCounter)}}
	require.NoError(t, c.Create(t.Context(), ns))
	return ns.Name
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

func waitCached(t *testing.T, mgr ctrl.Manager, objs ...client.Object) {
	t.Helper()
	for _, obj := range objs {
		into := obj.DeepCopyObject().(client.Object)
		require.Eventually(t, func() bool {
			return mgr.GetCache().Get(t.Context(), client.ObjectKeyFromObject(obj), into) == nil
		}, waitFor, tick, "cache never saw %s", obj.GetName())
	}
}

func hasFinalizer(t *testing.T, c client.Client, s *corev1.Secret) bool {
	got := &corev1.Secret{}
	require.NoError(t, c.Get(t.Context(), client.ObjectKeyFromObject(s), got))
	return controllerutil.ContainsFinalizer(got, v1alpha1.SecretFinalizer)
}

func requireFinalizer(t *testing.T, c client.Client, s *corev1.Secret, want bool) {
	t.Helper()
	require.Eventually(t, func() bool { return hasFinalizer(t, c, s) == want }, waitFor, tick,
		"secret %s: finalizer present should be %v", s.Name, want)
}

// requireFinalizerFor checks that the secret keeps its finalizer for d.
func requireFinalizerFor(t *testing.T, c client.Client, s *corev1.Secret, d time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(tick) {
		require.True(t, hasFinalizer(t, c, s), "secret %s lost its finalizer", s.Name)
	}
}

// requireNoFinalizerFor checks that the secret stays without finalizer for d.
func requireNoFinalizerFor(t *testing.T, c client.Client, s *corev1.Secret, d time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(tick) {
		require.False(t, hasFinalizer(t, c, s), "secret %s got a finalizer", s.Name)
	}
}

func requireEvent(t *testing.T, c client.Client, s *corev1.Secret, reason, want string) {
	t.Helper()
	var notes []string
	require.Eventually(t, func() bool {
		list := &eventsv1.EventList{}
		if err := c.List(t.Context(), list, client.InNamespace(s.Namespace)); err != nil {
			return false
		}
		notes = notes[:0]
		for _, e := range list.Items {
			if e.Regarding.Kind != "Secret" || e.Regarding.Name != s.Name || e.Reason != reason {
				continue
			}
			notes = append(notes, e.Note)
			if strings.Contains(e.Note, want) {
				return true
			}
		}
		return false
	}, waitFor, tick, "no %s event on secret %s containing %q; saw %q", reason, s.Name, want, notes)
}
