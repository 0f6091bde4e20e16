package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/machina-io/machina/core/testenv"
)

// TestControlPlaneKeepsTheAPIServerLog: the API server's log lands in the
// work directory, at the verbosity asked for (the API server prints its
// flags at --v=1, so the line below is there only if --v reached it).
func TestControlPlaneKeepsTheAPIServerLog(t *testing.T) {
	assets := testenv.Assets(t)
	dir := t.TempDir()
	cp, err := startControlPlane(dir, assets, filepath.Join("..", "..", "..", "deploy", "crds"), 1)
	require.NoError(t, err)
	require.NoError(t, cp.stop())
	log, err := os.ReadFile(filepath.Join(dir, "apiserver.log"))
	require.NoError(t, err)
	assert.Contains(t, string(log), `FLAG: --v="1"`)
}
