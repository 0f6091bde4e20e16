package nodeinmemory

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/machina-io/machina/conformance/conformancetest"
	"github.com/machina-io/machina/drivers/node-inmemory/nodesetup"
)

var (
	setupOnce sync.Once
	nodePath  string
	setupErr  error
)

// node returns the node binary that runs the driver, with the driver's
// node_modules/ installed from package-lock.json, and fails the test when it
// cannot: without node, the driver cannot be tested, and that is a failure,
// not a skip.
func node(t testing.TB) string {
	t.Helper()
	setupOnce.Do(func() { nodePath, setupErr = nodesetup.Node(driverDir(t)) })
	if setupErr != nil {
		t.Fatalf("the Node.js driver cannot run: %v", setupErr)
	}
	return nodePath
}

// driverDir is this directory: main.js and lib/ live here.
func driverDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	return dir
}

// mainJS is the driver's entry point.
func mainJS(t testing.TB) string { return filepath.Join(driverDir(t), "main.js") }

// program is the Node.js driver as the conformance test kit starts it.
func program(t testing.TB) conformancetest.Program {
	return conformancetest.Program{Name: "node driver", Path: node(t), Args: []string{mainJS(t)}}
}

// startDriver starts the driver on a socket of its own and waits until it
// serves; it is stopped when the test ends.
func startDriver(t testing.TB, args ...string) *conformancetest.Driver {
	t.Helper()
	return program(t).Start(t, args...)
}
