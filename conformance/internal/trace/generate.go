package trace

import (
	"os"
	"path/filepath"
	"strings"
)

// Paths relative to the repository root.
const (
	SpecPath   = "docs/driver-api.md"
	MatrixPath = "docs/conformance-matrix.md"
	GoPath     = "conformance/zz_generated.spec.go"
	SuiteDir   = "conformance"
)

// Load reads the spec and the suite's rules under the repository root.
func Load(root string) (*Matrix, error) {
	src, err := os.ReadFile(filepath.Join(root, SpecPath))
	if err != nil {
		return nil, err
	}
	checks, err := ReadChecks(filepath.Join(root, SuiteDir))
	if err != nil {
		return nil, err
	}
	caught, err := ReadCaught(root)
	if err != nil {
		return nil, err
	}
	return &Matrix{Spec: Parse(string(src)), Checks: checks, Caught: bySentence(caught), CaughtClauses: caught,
		Lines: strings.Split(string(src), "\n")}, nil
}

// Generate returns the generated files, by path relative to root.
func Generate(root string) (map[string][]byte, error) {
	m, err := Load(root)
	if err != nil {
		return nil, err
	}
	g, err := m.RenderGo()
	if err != nil {
		return nil, err
	}
	return map[string][]byte{MatrixPath: m.RenderMarkdown(), GoPath: g}, nil
}
