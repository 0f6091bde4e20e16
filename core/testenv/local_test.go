package testenv_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/testenv"
)

// TestStartLocal starts the control plane the demo, the chaos run and the
// benchmark share: its data lands in the caller's directory, the API
// server takes the caller's flags, the CRDs are served, the admin
// kubeconfig file works, and the API server comes back on the same
// endpoint after a stop, as the chaos run's outage needs.
func TestStartLocal(t *testing.T) {
	assets := testenv.Assets(t)
	dir := t.TempDir()
	auditLog := filepath.Join(t.TempDir(), "audit.log")
	policy := filepath.Join(dir, "policy.yaml")
	require.NoError(t, os.WriteFile(policy, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"), 0o600))
	local, err := testenv.StartLocal(testenv.LocalOptions{
		Dir:    dir,
		Assets: assets,
		ConfigureAPIServer: func(api *envtest.APIServer) {
			api.Configure().Set("audit-policy-file", policy).Set("audit-log-path", auditLog)
		},
	})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, local.Stop()) })
	assert.DirExists(t, filepath.Join(dir, "etcd"))
	assert.DirExists(t, filepath.Join(dir, "apiserver"))
	assert.Equal(t, filepath.Join(dir, "admin.kubeconfig"), local.Kubeconfig)

	scheme, err := testenv.NewScheme()
	require.NoError(t, err)
	cfg, err := clientcmd.BuildConfigFromFlags("", local.Kubeconfig)
	require.NoError(t, err)
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	require.NoError(t, err)
	require.NoError(t, c.List(t.Context(), &v1alpha1.MachineList{}), "the kubeconfig reaches an API server with the CRDs")
	assert.FileExists(t, auditLog, "the API server took the caller's flags")

	api := local.Env.ControlPlane.APIServer
	require.NoError(t, api.Stop())
	require.Error(t, c.List(t.Context(), &v1alpha1.MachineList{}), "the API server is stopped")
	require.NoError(t, api.Start())
	require.NoError(t, c.List(t.Context(), &v1alpha1.MachineList{}), "the API server is back on the same endpoint")
}

// TestStartLocalWithoutAssets checks the message a program's user sees
// when the binaries are missing, before anything starts.
func TestStartLocalWithoutAssets(t *testing.T) {
	dir := t.TempDir()
	_, err := testenv.StartLocal(testenv.LocalOptions{Dir: dir, Assets: filepath.Join(dir, "none")})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "hack/envtest-assets.sh")
	assert.NoDirExists(t, filepath.Join(dir, "etcd"), "nothing was set up")
}
