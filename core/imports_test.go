package core_test

import (
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// machina is the prefix of every module path of the repository.
const machina = "github.com/machina-io/machina/"

// moduleGraph is the one-way module graph of docs/architecture.md and
// DESIGN's layout: proto < sdk < drivers, proto < core < the manager binary.
// Each entry names a module (its directory from the repository root), the
// packages of it to check, and the repository paths their production code
// may import; tests are not looked at, so test-only helpers may reach
// further (the core's tests serve the inmemory driver).
var moduleGraph = []struct {
	module, packages string
	may              []string
}{
	{"proto", "./...", []string{"proto"}},
	{"sdk", "./...", []string{"proto", "sdk"}},
	{"core", "./...", []string{"proto", "core"}},
	{"cmd", "./machina-manager", []string{"proto", "core", "cmd/machina-manager"}},
	{"cmd", "./kubectl-machina", []string{"core", "cmd/kubectl-machina"}},
	{"cmd", "./machina-node-agent", []string{"core", "cmd/machina-node-agent"}},
	{"conformance", "./...", []string{"proto", "conformance"}},
	{"internal", "./...", []string{"internal"}},
	{"drivers/inmemory", "./...", []string{"proto", "sdk", "drivers/inmemory"}},
	{"drivers/virtualnode", "./...", []string{"proto", "sdk", "drivers/virtualnode"}},
}

// testOnly are modules no production package may import, whatever its place
// in the graph.
var testOnly = []string{"github.com/stretchr/testify"}

// TestModuleGraph fails on an import that points the wrong way: the core
// reaching the SDK, a driver or a test library outside its tests, the SDK
// reaching the core, the Driver API reaching anything of machina. It asks
// the go command for the non-test dependencies, so it sees what a build
// links.
func TestModuleGraph(t *testing.T) {
	for _, m := range moduleGraph {
		t.Run(m.module, func(t *testing.T) {
			// The test runs in the core module's directory.
			dir := "../" + m.module
			cmd := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, m.packages)
			cmd.Dir = dir
			out, err := cmd.Output()
			if err != nil {
				var stderr string
				if ee, ok := err.(*exec.ExitError); ok {
					stderr = string(ee.Stderr)
				}
				t.Fatalf("go list -deps %s in %s: %v\n%s", m.packages, dir, err, stderr)
			}
			edges := 0
			for line := range strings.Lines(string(out)) {
				fields := strings.Fields(line)
				if len(fields) == 0 {
					continue
				}
				// Edges out of a package that should not be there at all
				// are left out: its importer is reported.
				from := fields[0]
				if !strings.HasPrefix(from, machina) || forbidden(from, m.may) != "" {
					continue
				}
				for _, to := range fields[1:] {
					edges++
					if reason := forbidden(to, m.may); reason != "" {
						t.Errorf("%s imports %s: %s", from, to, reason)
					}
				}
			}
			// The command listed something: a wrong pattern would pass
			// vacuously.
			if edges == 0 {
				t.Fatalf("go list -deps %s in %s listed no imports of machina's packages", m.packages, dir)
			}
		})
	}
}

// forbidden tells why importing path breaks the graph, or "" when it may be
// imported by a package allowed the repository paths in may.
func forbidden(path string, may []string) string {
	for _, p := range testOnly {
		if path == p || strings.HasPrefix(path, p+"/") {
			return "a test library in production code (move the helper into a _test.go file or a test-only package of another module)"
		}
	}
	rel, ok := strings.CutPrefix(path, machina)
	if !ok {
		return ""
	}
	for _, p := range may {
		if rel == p || strings.HasPrefix(rel, p+"/") {
			return ""
		}
	}
	return "outside the allowed edges " + strings.Join(may, ", ")
}

// kit is the controller kit inside core/internal/controller: what every
// controller may use. docs/architecture.md lists the same packages.
var kit = []string{"controllertest", "eventcost", "phase", "setup", "throttle"}

// TestCoreGraph holds the seams inside the core (docs/architecture.md,
// "Edges inside the core"): the API types import only API types; the
// libraries under core/internal import API types and each other, never a
// controller; the driver client is a leaf; a controller imports the API
// types, the libraries and the kit, never another controller; only the
// manager wires controllers together.
func TestCoreGraph(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...")
	out, err := cmd.Output()
	require.NoError(t, err, "go list -deps ./...")
	const core = machina + "core/"
	edges := 0
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		from, ok := strings.CutPrefix(fields[0], core)
		if !ok {
			continue
		}
		for _, imp := range fields[1:] {
			to, ok := strings.CutPrefix(imp, core)
			if !ok {
				continue
			}
			edges++
			if why := coreEdgeForbidden(from, to); why != "" {
				t.Errorf("core/%s imports core/%s: %s", from, to, why)
			}
		}
	}
	require.NotZero(t, edges, "go list listed no edges inside the core")
}

// coreLayer names the layer of a core package and, for a controller, which
// controller it belongs to (its subpackages are its own).
func coreLayer(pkg string) (layer, owner string) {
	switch {
	case pkg == "manager":
		return "manager", ""
	case pkg == "api" || strings.HasPrefix(pkg, "api/"):
		return "api", ""
	case pkg == "testenv":
		return "testenv", ""
	case pkg == "internal/driver":
		return "leaf", ""
	}
	if rest, ok := strings.CutPrefix(pkg, "internal/controller/"); ok {
		parts := strings.Split(rest, "/")
		if slices.Contains(kit, parts[0]) {
			return "kit", ""
		}
		if parts[0] == "safety" && len(parts) > 1 {
			return "controller", "safety/" + parts[1]
		}
		return "controller", parts[0]
	}
	return "library", ""
}

// coreEdgeForbidden says why from may not import to, or "".
func coreEdgeForbidden(from, to string) string {
	fromLayer, fromOwner := coreLayer(from)
	toLayer, toOwner := coreLayer(to)
	allowed := map[string][]string{
		"api":        {"api"},
		"testenv":    {"api"},
		"leaf":       {},
		"library":    {"api", "library", "leaf"},
		"kit":        {"api", "library", "leaf", "kit", "testenv"},
		"controller": {"api", "library", "leaf", "kit"},
		"manager":    {"api", "library", "leaf", "kit", "controller", "testenv"},
	}[fromLayer]
	if fromLayer == "controller" && toLayer == "controller" {
		if fromOwner == toOwner {
			return ""
		}
		return "a controller imports another controller; move what they share into a library under core/internal or into core/api"
	}
	if !slices.Contains(allowed, toLayer) {
		return fmt.Sprintf("a %s package may import only %v inside the core, not a %s package", fromLayer, allowed, toLayer)
	}
	return ""
}
