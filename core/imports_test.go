package core_test

import (
	"os/exec"
	"strings"
	"testing"
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
