package pythoninmemory

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/machina-io/machina/conformance/conformancetest"
)

// aptPackages are the Debian packages the driver runs on.
const aptPackages = "python3-grpcio python3-protobuf"

// python returns the interpreter that runs the driver and fails the test,
// naming the packages to install, when it cannot import grpc and protobuf.
// Debian's /usr/bin/python3 is the default because the packages install
// into it; a python3 found on PATH (pyenv, a virtualenv) usually lacks them.
func python(t testing.TB) string {
	t.Helper()
	interpreter := os.Getenv("MACHINA_PYTHON")
	if interpreter == "" {
		interpreter = "/usr/bin/python3"
	}
	out, err := exec.Command(interpreter, "-c", "import grpc, google.protobuf").CombinedOutput()
	if err != nil {
		t.Fatalf("the Python driver needs %s with grpc and protobuf: %v\n%s\ninstall them with: apt-get install -y %s (or set MACHINA_PYTHON to an interpreter that has them)",
			interpreter, err, out, aptPackages)
	}
	return interpreter
}

// driverDir is this directory: main.py and the Python package live here.
func driverDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	return dir
}

// program is the Python driver as the conformance test kit starts it.
func program(t testing.TB) conformancetest.Program {
	return conformancetest.Program{
		Name: "python driver",
		Path: python(t),
		Args: []string{filepath.Join(driverDir(t), "main.py")},
		Env:  []string{"PYTHONDONTWRITEBYTECODE=1"},
	}
}

// startDriver starts the driver on a socket of its own and waits until it
// serves; it is stopped when the test ends.
func startDriver(t testing.TB, args ...string) *conformancetest.Driver {
	t.Helper()
	return program(t).Start(t, args...)
}
