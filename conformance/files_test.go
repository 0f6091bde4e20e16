package conformance_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/machina-io/machina/conformance"
)

func TestLoadSampleFiles(t *testing.T) {
	class, err := conformance.LoadMachineClass("testdata/machineclass.yaml")
	require.NoError(t, err)
	assert.Equal(t, "conformance-small", class.Name, "the name comes from metadata.name")
	assert.Equal(t, "inmemory", class.Provider)
	assert.JSONEq(t, `{"capacity":{"cpu":"2","memory":"4Gi"}}`, string(class.ProviderSpec))
	require.NotNil(t, class.NodeTemplate)
	assert.Equal(t, "small", class.NodeTemplate.GetInstanceType())
	assert.Equal(t, "4Gi", class.NodeTemplate.GetCapacity()["memory"])

	spec, err := conformance.LoadProviderSpec("testdata/incompatible-providerspec.yaml")
	require.NoError(t, err)
	assert.JSONEq(t, `{"capacity":{"cpu":"8","memory":"32Gi"}}`, string(spec))

	secrets, err := conformance.LoadSecrets("testdata/secrets.yaml")
	require.NoError(t, err)
	assert.Equal(t, map[string][]byte{
		"accessKeyID":     []byte("conformance-access-key"),
		"secretAccessKey": []byte("conformance-secret-key"),
	}, secrets)

	vols, err := conformance.LoadVolumeFixtures("testdata/volumes.yaml")
	require.NoError(t, err)
	require.Len(t, vols, 4)
	assert.Equal(t, "pv-inmemory-csi", vols[0].Name, "the name comes from the manifest")
	assert.Equal(t, "disk-0001", vols[0].VolumeID)
	assert.JSONEq(t, `{"capacity":{"storage":"10Gi"},"accessModes":["ReadWriteOnce"],"csi":{"driver":"inmemory.csi.machina.io","volumeHandle":"disk-0001"}}`, string(vols[0].Spec))
	assert.Equal(t, "pv-nfs", vols[3].Name)
	assert.True(t, vols[3].NotMine)

	nt, err := conformance.LoadNodeTemplate("testdata/nodetemplate.yaml")
	require.NoError(t, err)
	assert.Equal(t, "worker", nt.GetLabels()["node.kubernetes.io/role"])
	require.Len(t, nt.GetTaints(), 1)
	assert.Equal(t, "NoSchedule", nt.GetTaints()[0].GetEffect())
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	t.Run("plain secrets map", func(t *testing.T) {
		got, err := conformance.LoadSecrets(write("plain.yaml", "token: abc\nregion: eu\n"))
		require.NoError(t, err)
		assert.Equal(t, map[string][]byte{"token": []byte("abc"), "region": []byte("eu")}, got)
	})
	t.Run("bad base64 names the key, not the value", func(t *testing.T) {
		_, err := conformance.LoadSecrets(write("bad.yaml", "kind: Secret\ndata:\n  token: not-base64-TOPSECRET!\n"))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "data.token")
		assert.NotContains(t, err.Error(), "TOPSECRET")
	})
	t.Run("provider spec not an object", func(t *testing.T) {
		_, err := conformance.LoadMachineClass(write("class.yaml", "name: c\nproviderSpec: [1, 2]\n"))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "providerSpec must be a JSON object")
	})
	t.Run("missing file", func(t *testing.T) {
		_, err := conformance.LoadVolumeFixtures(filepath.Join(dir, "nope.yaml"))
		require.Error(t, err)
	})
	t.Run("volume entry with both forms", func(t *testing.T) {
		_, err := conformance.LoadVolumeFixtures(write("vols.yaml", "- name: a\n  spec: {}\n  persistentVolume: {metadata: {name: b}, spec: {}}\n  notMine: true\n"))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "either persistentVolume or name and spec")
	})
}
