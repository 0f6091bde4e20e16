package v1_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	mcfgv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
	"github.com/machina-io/machina/core/testenv"
)

// TestAPIOnKubeAPIServer installs the generated CRDs in a real kube-apiserver
// and checks that OpenShift manifests apply unchanged, that Ignition fields
// machina does not model are kept, and the printer columns, status
// subresource and schema checks.
func TestAPIOnKubeAPIServer(t *testing.T) {
	env := testenv.Start(t)
	ctx := t.Context()
	c := env.Client

	t.Run("examples apply unchanged", func(t *testing.T) { testExamples(t, ctx, c) })
	t.Run("unknown ignition fields are kept", func(t *testing.T) { testUnknownFieldsKept(t, ctx, c) })
	t.Run("pool status subresource", func(t *testing.T) { testPoolStatus(t, ctx, c) })
	t.Run("pool printer columns", func(t *testing.T) { testPoolPrinterColumns(t, ctx, c, env.Config) })
	t.Run("schema rejects invalid objects", func(t *testing.T) { testSchemaRejects(t, ctx, c) })
	t.Run("short names", func(t *testing.T) { testShortNames(t, env.Config) })
	t.Run("MCO's pool fields are kept", func(t *testing.T) { testPoolFieldsKept(t, ctx, c) })
}

// testShortNames resolves short names as kubectl does (discovery and its
// shortcut expander), with machina's CRDs and MCM's installed together:
// mc is MCM's Machine, unambiguously (machina is MCM-first; MachineConfig
// does not claim it); mcp is MachineConfigPool; machineconfig reaches
// MachineConfig.
func testShortNames(t *testing.T, cfg *rest.Config) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	require.NoError(t, err)
	var warnings []string
	expander := restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)), dc,
		func(w string) { warnings = append(warnings, w) })
	for in, want := range map[string]schema.GroupResource{
		"mc":             {Group: "machine.sapcloud.io", Resource: "machines"},
		"mcp":            {Group: mcfgv1.GroupVersion.Group, Resource: "machineconfigpools"},
		"machineconfig":  {Group: mcfgv1.GroupVersion.Group, Resource: "machineconfigs"},
		"machineconfigs": {Group: mcfgv1.GroupVersion.Group, Resource: "machineconfigs"},
	} {
		gvr, err := expander.ResourceFor(schema.GroupVersionResource{Resource: in})
		require.NoError(t, err, in)
		assert.Equal(t, want, gvr.GroupResource(), in)
	}
	assert.Empty(t, warnings, "no short name is ambiguous")
}

// testPoolFieldsKept: MCO's pool fields (pinnedImageSets, osImageStream,
// certExpirys, poolSynchronizersStatus) are stored and read back, not
// pruned with a warning.
func testPoolFieldsKept(t *testing.T, ctx context.Context, c client.Client) {
	u := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(`
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfigPool
metadata:
  name: mco-fields
spec:
  pinnedImageSets:
  - name: release-images
  osImageStream:
    name: rhel-10
`), &u.Object))
	require.NoError(t, c.Create(ctx, u))
	var pool mcfgv1.MachineConfigPool
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "mco-fields"}, &pool))
	assert.Equal(t, []mcfgv1.PinnedImageSetRef{{Name: "release-images"}}, pool.Spec.PinnedImageSets)
	require.NotNil(t, pool.Spec.OSImageStream)
	assert.Equal(t, "rhel-10", pool.Spec.OSImageStream.Name)

	expiry := metav1.Now().Rfc3339Copy()
	pool.Status.CertExpirys = []mcfgv1.CertExpiry{{Bundle: "kubelet-ca", Subject: "CN=kube-apiserver", Expiry: &expiry}}
	pool.Status.PoolSynchronizersStatus = []mcfgv1.PoolSynchronizerStatus{{PoolSynchronizerType: "PinnedImageSets", MachineCount: 2, UpdatedMachineCount: 1}}
	require.NoError(t, c.Status().Update(ctx, &pool))
	var back mcfgv1.MachineConfigPool
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "mco-fields"}, &back))
	assert.Equal(t, pool.Status.CertExpirys, back.Status.CertExpirys)
	assert.Equal(t, pool.Status.PoolSynchronizersStatus, back.Status.PoolSynchronizersStatus)
}

func examplesDir(t *testing.T) string {
	crds, err := testenv.CRDDir()
	require.NoError(t, err)
	return filepath.Join(filepath.Dir(crds), "examples", "machineconfig")
}

// testExamples applies deploy/examples/machineconfig as a user would and
// checks the typed reading of the MachineConfig.
func testExamples(t *testing.T, ctx context.Context, c client.Client) {
	files, err := filepath.Glob(filepath.Join(examplesDir(t), "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		u := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal(data, &u.Object), f)
		require.NoError(t, c.Create(ctx, u), f)

		// What was written reads back whole: nothing pruned.
		back := &unstructured.Unstructured{}
		back.SetGroupVersionKind(u.GroupVersionKind())
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(u), back))
		assert.Equal(t, u.Object["spec"], back.Object["spec"], f)
	}

	var mc mcfgv1.MachineConfig
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "99-worker-chrony"}, &mc))
	assert.Equal(t, "worker", mc.Labels[mcfgv1.RoleLabel])
	assert.Equal(t, []string{"nosmt"}, mc.Spec.KernelArguments)
	ign, err := mcfgv1.ParseIgnition(mc.Spec.Config.Raw)
	require.NoError(t, err)
	assert.Equal(t, "3.2.0", ign.Ignition.Version)
	require.Len(t, ign.Storage.Files, 1)
	f := ign.Storage.Files[0]
	assert.Equal(t, "/etc/chrony.d/example.conf", f.Path)
	assert.Equal(t, 0o644, f.FileMode())
	data, err := f.Data()
	require.NoError(t, err)
	assert.Equal(t, "server time.example.com iburst\n", string(data))
	require.Len(t, ign.Systemd.Units, 1)
	u := ign.Systemd.Units[0]
	assert.Equal(t, "example-hello.service", u.Name)
	require.NotNil(t, u.Enabled)
	assert.True(t, *u.Enabled)
	require.NotNil(t, u.Contents)
	assert.Contains(t, *u.Contents, "ExecStart=/usr/bin/echo hello")

	var pool mcfgv1.MachineConfigPool
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "worker"}, &pool))
	assert.Equal(t, map[string]string{mcfgv1.RoleLabel: "worker"}, pool.Spec.MachineConfigSelector.MatchLabels)
	require.NotNil(t, pool.Spec.MaxUnavailable)
	assert.Equal(t, 1, pool.Spec.MaxUnavailable.IntValue())
}

// testUnknownFieldsKept writes Ignition sections machina does not apply
// (directories) beside ones it does (core's keys, a file's user), reads
// them back as written, and ParseIgnition, which the render controller and
// the node agent call, refuses the one it does not apply, naming it.
func testUnknownFieldsKept(t *testing.T, ctx context.Context, c client.Client) {
	config := `{"ignition":{"version":"3.4.0","config":{"merge":[]}},` +
		`"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["ssh-ed25519 AAAA test"]}]},` +
		`"storage":{"directories":[{"path":"/var/lib/example","mode":493}],` +
		`"files":[{"path":"/etc/example","user":{"name":"root"},"contents":{"source":"data:,hi%0A"}}]}}`
	mc := &mcfgv1.MachineConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "50-unknown-fields"},
		Spec:       mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: []byte(config)}},
	}
	require.NoError(t, c.Create(ctx, mc))
	var back mcfgv1.MachineConfig
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(mc), &back))
	var want, got any
	require.NoError(t, json.Unmarshal([]byte(config), &want))
	require.NoError(t, json.Unmarshal(back.Spec.Config.Raw, &got))
	assert.Equal(t, want, got)

	_, err := mcfgv1.ParseIgnition(back.Spec.Config.Raw)
	require.ErrorContains(t, err, "storage.directories")

	var withoutDirectories map[string]any
	require.NoError(t, json.Unmarshal(back.Spec.Config.Raw, &withoutDirectories))
	delete(withoutDirectories["storage"].(map[string]any), "directories")
	raw, err := json.Marshal(withoutDirectories)
	require.NoError(t, err)
	ign, err := mcfgv1.ParseIgnition(raw)
	require.NoError(t, err)
	require.Len(t, ign.Storage.Files, 1)
	assert.Equal(t, "root", *ign.Storage.Files[0].User.Name)
	data, err := ign.Storage.Files[0].Data()
	require.NoError(t, err)
	assert.Equal(t, "hi\n", string(data))
}

func testPoolStatus(t *testing.T, ctx context.Context, c client.Client) {
	pool := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "status-pool"}}
	require.NoError(t, c.Create(ctx, pool))
	pool.Status.MachineCount = 3
	pool.Status.Configuration.Name = "rendered-status-pool-0123"
	require.NoError(t, c.Status().Update(ctx, pool))

	// A write of the main resource does not change the status.
	pool.Status.MachineCount = 7
	pool.Spec.Paused = true
	require.NoError(t, c.Update(ctx, pool))
	var back mcfgv1.MachineConfigPool
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(pool), &back))
	assert.True(t, back.Spec.Paused)
	assert.Equal(t, int32(3), back.Status.MachineCount)
	assert.Equal(t, "rendered-status-pool-0123", back.Status.Configuration.Name)
}

func testPoolPrinterColumns(t *testing.T, ctx context.Context, c client.Client, cfg *rest.Config) {
	var pool mcfgv1.MachineConfigPool
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "status-pool"}, &pool))
	pool.Status.Conditions = []metav1.Condition{
		{Type: mcfgv1.PoolUpdated, Status: metav1.ConditionFalse, Reason: "Test", LastTransitionTime: metav1.Now()},
		{Type: mcfgv1.PoolUpdating, Status: metav1.ConditionTrue, Reason: "Test", LastTransitionTime: metav1.Now()},
		{Type: mcfgv1.PoolDegraded, Status: metav1.ConditionFalse, Reason: "Test", LastTransitionTime: metav1.Now()},
	}
	pool.Status.ReadyMachineCount = 2
	pool.Status.UpdatedMachineCount = 1
	require.NoError(t, c.Status().Update(ctx, &pool))

	httpClient, err := rest.HTTPClientFor(cfg)
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet,
		strings.TrimSuffix(cfg.Host, "/")+"/apis/machineconfiguration.openshift.io/v1/machineconfigpools/status-pool", nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := httpClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	var tbl metav1.Table
	require.NoError(t, json.Unmarshal(body, &tbl))
	var names []string
	for _, col := range tbl.ColumnDefinitions {
		names = append(names, col.Name)
	}
	// As `oc get mcp` prints them.
	assert.Equal(t, []string{"Name", "Config", "Updated", "Updating", "Degraded", "MachineCount",
		"ReadyMachineCount", "UpdatedMachineCount", "DegradedMachineCount", "Age"}, names)
	require.Len(t, tbl.Rows, 1)
	assert.Equal(t, []any{"status-pool", "rendered-status-pool-0123", "False", "True", "False",
		float64(3), float64(2), float64(1), float64(0)}, tbl.Rows[0].Cells[:9])
}

func testSchemaRejects(t *testing.T, ctx context.Context, c client.Client) {
	both := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
		"metadata": map[string]any{"name": "both-selectors"},
		"spec": map[string]any{
			"nodeSelector":    map[string]any{"matchLabels": map[string]any{"a": "b"}},
			"machineOwnerRef": map[string]any{"kind": "MachineSet", "namespace": "ns", "name": "set"},
		},
	}}
	err := c.Create(ctx, both)
	require.True(t, apierrors.IsInvalid(err), "got %v", err)
	assert.Contains(t, err.Error(), "mutually exclusive")

	badKind := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
		"metadata": map[string]any{"name": "bad-kind"},
		"spec": map[string]any{
			"machineOwnerRef": map[string]any{"kind": "Machine", "namespace": "ns", "name": "m"},
		},
	}}
	err = c.Create(ctx, badKind)
	require.True(t, apierrors.IsInvalid(err), "got %v", err)

	// nodeDisruptionPolicy: each action's type says which service field it
	// needs, and only that one; a restart names a unit.
	for name, tc := range map[string]struct {
		action map[string]any
		want   string
	}{
		"reload-without-service": {map[string]any{"type": "Reload"}, "reload is required for type Reload"},
		"restart-on-none":        {map[string]any{"type": "None", "restart": map[string]any{"serviceName": "a.service"}}, "restart is required for type Restart, and only for it"},
		"restart-of-a-non-unit":  {map[string]any{"type": "Restart", "restart": map[string]any{"serviceName": "rm -rf /"}}, "serviceName"},
		"unknown-type":           {map[string]any{"type": "Special"}, "Unsupported value"},
	} {
		policy := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
			"metadata": map[string]any{"name": "policy-" + name},
			"spec": map[string]any{"nodeDisruptionPolicy": map[string]any{
				"files": []any{map[string]any{"path": "/etc/x", "actions": []any{tc.action}}}}},
		}}
		err := c.Create(ctx, policy)
		require.True(t, apierrors.IsInvalid(err), "%s: got %v", name, err)
		assert.Contains(t, err.Error(), tc.want, name)
	}
	good := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
		"metadata": map[string]any{"name": "policy-good"},
		"spec": map[string]any{"nodeDisruptionPolicy": map[string]any{
			"files":  []any{map[string]any{"path": "/etc/x", "actions": []any{map[string]any{"type": "Restart", "restart": map[string]any{"serviceName": "chronyd.service"}}}}},
			"units":  []any{map[string]any{"name": "a.service", "actions": []any{map[string]any{"type": "DaemonReload"}}}},
			"sshkey": map[string]any{"actions": []any{map[string]any{"type": "None"}}},
		}},
	}}
	require.NoError(t, c.Create(ctx, good))

	badKernel := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
		"metadata": map[string]any{"name": "bad-kernel"},
		"spec":     map[string]any{"kernelType": "turbo"},
	}}
	err = c.Create(ctx, badKernel)
	require.True(t, apierrors.IsInvalid(err), "got %v", err)

	badLevel := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "KubeletConfig",
		"metadata": map[string]any{"name": "bad-level"},
		"spec":     map[string]any{"logLevel": 11},
	}}
	err = c.Create(ctx, badLevel)
	require.True(t, apierrors.IsInvalid(err), "got %v", err)
}
