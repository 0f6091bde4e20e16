package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/machina-io/machina/cmd/internal/manifests"
)

// TestReadManifestsOfTheMachineConfigExample reads what the demo applies
// for its pool step: the example's MachineConfig and pool.
func TestReadManifestsOfTheMachineConfigExample(t *testing.T) {
	root, err := manifests.RepoRoot(".")
	require.NoError(t, err)
	objs, err := readManifests(filepath.Join(root, "deploy", "examples", "machineconfig"))
	require.NoError(t, err)
	var got []string
	for _, o := range objs {
		got = append(got, o.GetKind()+"/"+o.GetName())
	}
	assert.ElementsMatch(t, []string{"MachineConfig/99-worker-chrony", "MachineConfig/99-worker-ssh", "MachineConfigPool/" + demoPool}, got)
}
