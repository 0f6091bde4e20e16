package main

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/cmd/internal/agentpod"
	"github.com/machina-io/machina/cmd/internal/manifests"
	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
	"github.com/machina-io/machina/core/nodeconfig"
	"github.com/machina-io/machina/core/testenv"
)

// TestAgentReadsOnlyItsOwnConfiguration applies deploy/node-agent to a
// real API server, runs the manager's node configuration server, and
// checks with two agents' pod-bound tokens that each reads the rendered
// MachineConfigs its own Node names and their pool, and nothing else:
// neither the other Node's, nor any MachineConfig from the API server.
func TestAgentReadsOnlyItsOwnConfiguration(t *testing.T) {
	env := testenv.Start(t)
	ctx := t.Context()
	root, err := manifests.RepoRoot(".")
	require.NoError(t, err)
	objs, err := manifests.Render(root + "/deploy/node-agent")
	require.NoError(t, err)
	require.NoError(t, manifests.Apply(ctx, env.Client, objs, manifests.FieldOwner))

	for _, n := range []string{"a", "b"} {
		require.NoError(t, env.Client.Create(ctx, &mcv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "pool-" + n}}))
		for _, gen := range []string{"0", "1"} {
			require.NoError(t, env.Client.Create(ctx, &mcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{
				Name:        "rendered-" + n + "-" + gen,
				Annotations: map[string]string{mcv1.RenderedFromPoolAnnotation: "pool-" + n},
			}}))
		}
		require.NoError(t, env.Client.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name: "node-" + n,
			Annotations: map[string]string{
				mcv1.DesiredConfigAnnotation: "rendered-" + n + "-1",
				mcv1.CurrentConfigAnnotation: "rendered-" + n + "-0",
			},
		}}))
	}
	require.NoError(t, env.Client.Create(ctx, &mcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "99-secret"}}))

	ca := types.NamespacedName{Namespace: "machina-node-agent", Name: "machina-node-config-ca"}
	require.Equal(t, ca.String(), nodeconfig.DefaultCAConfigMap, "the ConfigMap deploy/node-agent lets agents read")
	endpoint := &nodeconfig.Endpoint{
		Server: &nodeconfig.Server{Reader: env.Client, Reviews: env.Client, Log: testr.New(t)},
		Addr:   "127.0.0.1:0", Names: []string{"127.0.0.1"}, CA: ca, Publisher: env.Client,
	}
	served := make(chan error, 1)
	go func() { served <- endpoint.Start(ctx) }()
	require.Eventually(t, func() bool {
		return endpoint.Address() != "" && env.Client.Get(ctx, ca, &corev1.ConfigMap{}) == nil
	}, waitTimeout, 20*time.Millisecond, "the server listens and publishes its certificate")
	url := "https://" + endpoint.Address()

	cs, err := kubernetes.NewForConfig(env.Config)
	require.NoError(t, err)
	ds := &appsv1.DaemonSet{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: "machina-node-agent", Name: "machina-node-agent"}, ds))
	agentOn := func(node string) (*nodeconfig.Client, *rest.Config) {
		token, err := agentpod.Token(ctx, env.Client, cs, ds, node, time.Hour)
		require.NoError(t, err)
		cfg := &rest.Config{Host: env.Config.Host, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: env.Config.CAData}}
		reader, err := nodeconfig.NewClient(url, ca, env.Client, cfg)
		require.NoError(t, err)
		return reader, cfg
	}
	agentA, agentACfg := agentOn("node-a")
	agentB, _ := agentOn("node-b")

	get := func(c client.Reader, obj client.Object, name string) error {
		return c.Get(ctx, client.ObjectKey{Name: name}, obj)
	}
	// Its own Node's configurations and their pool: served, as stored.
	for _, name := range []string{"rendered-a-1", "rendered-a-0"} {
		mc := &mcv1.MachineConfig{}
		require.NoError(t, get(agentA, mc, name))
		assert.Equal(t, "pool-a", mc.Annotations[mcv1.RenderedFromPoolAnnotation])
	}
	require.NoError(t, get(agentA, &mcv1.MachineConfigPool{}, "pool-a"))
	require.NoError(t, get(agentB, &mcv1.MachineConfig{}, "rendered-b-1"))

	// Anything else: refused, and the reason says why.
	for _, name := range []string{"rendered-b-1", "rendered-b-0", "99-secret", "rendered-a-2"} {
		err := get(agentA, &mcv1.MachineConfig{}, name)
		assert.Truef(t, apierrors.IsForbidden(err), "agent A reads MachineConfig %s: %v", name, err)
		assert.ErrorContains(t, err, "node node-a names no MachineConfig "+name)
	}
	err = get(agentA, &mcv1.MachineConfigPool{}, "pool-b")
	assert.Truef(t, apierrors.IsForbidden(err), "agent A reads pool-b: %v", err)
	assert.ErrorContains(t, err, "MachineConfigPool pool-b")

	// A name its Node names that does not exist (yet): not found, as from
	// the API server.
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+mcv1.DesiredConfigAnnotation+`":"rendered-a-2"}}}`))
	require.NoError(t, env.Client.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, patch))
	err = get(agentA, &mcv1.MachineConfig{}, "rendered-a-2")
	assert.Truef(t, apierrors.IsNotFound(err), "a named MachineConfig that does not exist: %v", err)

	// The agent's own RBAC reads no MachineConfig and no pool.
	direct, err := client.New(agentACfg, client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	err = get(direct, &mcv1.MachineConfig{}, "rendered-a-1")
	assert.Truef(t, apierrors.IsForbidden(err), "agent A reads its MachineConfig from the API server: %v", err)
	err = get(direct, &mcv1.MachineConfigPool{}, "pool-a")
	assert.Truef(t, apierrors.IsForbidden(err), "agent A reads its pool from the API server: %v", err)

	// A token of the agent's ServiceAccount bound to no pod names no Node.
	seconds := int64(3600)
	tr, err := cs.CoreV1().ServiceAccounts("machina-node-agent").CreateToken(ctx, "machina-node-agent",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}, metav1.CreateOptions{})
	require.NoError(t, err)
	unbound, err := nodeconfig.NewClient(url, ca, env.Client, &rest.Config{BearerToken: tr.Status.Token})
	require.NoError(t, err)
	err = get(unbound, &mcv1.MachineConfig{}, "rendered-a-1")
	assert.Truef(t, apierrors.IsForbidden(err), "a token bound to no pod: %v", err)
	assert.ErrorContains(t, err, "names no Node")

	// Another ServiceAccount's pod on node A: not allowed the subresource.
	require.NoError(t, env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "machina-node-agent", Name: "other"}}))
	other := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ds.Namespace, Name: "other"}, Spec: *ds.Spec.DeepCopy()}
	other.Spec.Template.Spec.ServiceAccountName = "other"
	require.NoError(t, env.Client.Create(ctx, other))
	token, err := agentpod.Token(ctx, env.Client, cs, other, "node-a", time.Hour)
	require.NoError(t, err)
	stranger, err := nodeconfig.NewClient(url, ca, env.Client, &rest.Config{BearerToken: token})
	require.NoError(t, err)
	err = get(stranger, &mcv1.MachineConfig{}, "rendered-a-1")
	assert.Truef(t, apierrors.IsForbidden(err), "another ServiceAccount's pod on node A: %v", err)
	assert.ErrorContains(t, err, "may not get machineconfigs/node-config rendered-a-1")

	// No token, a token the API server does not know: unauthorized.
	bundle := &corev1.ConfigMap{}
	require.NoError(t, env.Client.Get(ctx, ca, bundle))
	roots := x509.NewCertPool()
	for _, v := range bundle.Data {
		require.True(t, roots.AppendCertsFromPEM([]byte(v)))
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}}
	for _, auth := range []string{"", "Bearer not-a-token"} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/v1/machineconfigs/rendered-a-1", nil)
		require.NoError(t, err)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := hc.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		assert.Equalf(t, http.StatusUnauthorized, resp.StatusCode, "Authorization %q", auth)
	}
	select {
	case err := <-served:
		t.Fatalf("the server stopped: %v", err)
	default:
	}
}
