package bootstrap

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/testenv"
)

func TestTokens(t *testing.T) {
	env := testenv.Start(t, testenv.WithoutCRDs())
	ctx := context.Background()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	tokens := &Tokens{
		Client:      env.Client,
		ExtraGroups: []string{"system:bootstrappers:machina"},
		Now:         func() time.Time { return now },
	}
	m := types.NamespacedName{Namespace: "ns", Name: "worker-1"}
	key := client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: SecretName(m)}

	token, err := tokens.Ensure(ctx, m, 20*time.Minute)
	require.NoError(t, err)
	assert.Regexp(t, bootstrapapi.BootstrapTokenPattern, token)

	secret := &corev1.Secret{}
	require.NoError(t, env.Client.Get(ctx, key, secret))
	assert.Equal(t, bootstrapapi.SecretTypeBootstrapToken, secret.Type)
	assert.Equal(t, tokenID(m), string(secret.Data[bootstrapapi.BootstrapTokenIDKey]))
	assert.Equal(t, token, string(secret.Data[bootstrapapi.BootstrapTokenIDKey])+"."+string(secret.Data[bootstrapapi.BootstrapTokenSecretKey]))
	assert.Equal(t, "2030-01-01T00:20:00Z", string(secret.Data[bootstrapapi.BootstrapTokenExpirationKey]))
	assert.Equal(t, "true", string(secret.Data[bootstrapapi.BootstrapTokenUsageAuthentication]))
	assert.Equal(t, "system:bootstrappers:machina", string(secret.Data[bootstrapapi.BootstrapTokenExtraGroupsKey]))

	again, err := tokens.Ensure(ctx, m, 20*time.Minute)
	require.NoError(t, err)
	assert.Equal(t, token, again, "a second reconcile gets the same token")

	// Once expired, the token is replaced by a fresh one.
	now = now.Add(21 * time.Minute)
	fresh, err := tokens.Ensure(ctx, m, 20*time.Minute)
	require.NoError(t, err)
	assert.NotEqual(t, token, fresh)
	require.NoError(t, env.Client.Get(ctx, key, secret))
	assert.Equal(t, "2030-01-01T00:41:00Z", string(secret.Data[bootstrapapi.BootstrapTokenExpirationKey]))

	require.NoError(t, tokens.Delete(ctx, m))
	assert.True(t, apierrors.IsNotFound(env.Client.Get(ctx, key, &corev1.Secret{})))
	require.NoError(t, tokens.Delete(ctx, m), "deleting a missing token is fine")

	// A Secret of that name that belongs to another machine is not taken over.
	other := types.NamespacedName{Namespace: "ns", Name: "worker-2"}
	require.NoError(t, env.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: SecretName(other),
			Annotations: map[string]string{machineAnnotation: "ns/someone-else"}},
		Type: bootstrapapi.SecretTypeBootstrapToken,
	}))
	_, err = tokens.Ensure(ctx, other, time.Minute)
	assert.ErrorContains(t, err, "belongs to machine")

	bad := &Tokens{Client: env.Client, ExtraGroups: []string{"not-a-bootstrap-group"}}
	_, err = bad.Ensure(ctx, types.NamespacedName{Namespace: "ns", Name: "worker-3"}, time.Minute)
	assert.ErrorContains(t, err, "not-a-bootstrap-group")
}
