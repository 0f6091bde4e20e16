package machineconfig

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
)

var update = flag.Bool("update", false, "rewrite docs/machine-config.md's field table from Fields")

// apiFields lists the JSON paths of t's leaf fields under prefix: structs
// are walked, slices of structs get "[]", everything else (strings,
// numbers, raw JSON sections) is a leaf.
func apiFields(prefix string, t reflect.Type) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct {
		return apiFields(prefix+"[]", t.Elem())
	}
	if t.Kind() != reflect.Struct {
		return []string{prefix}
	}
	var out []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		out = append(out, apiFields(prefix+"."+name, f.Type)...)
	}
	return out
}

// TestFieldTableIsComplete: every field of MachineConfigSpec and of the
// Ignition config has exactly one row, every row is a field, and every row
// names tests that exist.
func TestFieldTableIsComplete(t *testing.T) {
	var want []string
	for _, p := range apiFields("spec", reflect.TypeFor[mcv1.MachineConfigSpec]()) {
		if p != "spec.config" {
			want = append(want, p)
		}
	}
	want = append(want, apiFields("spec.config", reflect.TypeFor[mcv1.Ignition]())...)
	var have []string
	for _, f := range Fields {
		assert.False(t, slices.Contains(have, f.Path), "two rows for %s", f.Path)
		have = append(have, f.Path)
		assert.NotEmpty(t, f.How, f.Path)
		lower := strings.ToLower(f.How)
		assert.False(t, strings.Contains(lower, "carried") || strings.Contains(lower, "not applied") && f.Applied,
			"%s: a row never says carried or not applied without a refusal", f.Path)
	}
	for _, p := range want {
		assert.Contains(t, have, p, "the field %s has no row in Fields", p)
	}
	for _, p := range have {
		assert.Contains(t, want, p, "the row %s is not a field of the API types", p)
	}
	tests := testFunctions(t)
	for _, f := range Fields {
		for _, name := range strings.Split(f.Test, ", ") {
			assert.Contains(t, tests, name, "%s cites %s, which is no test", f.Path, name)
		}
	}
}

// testFunctions are the names of the Test functions of the node agent and
// of the MachineConfig API.
func testFunctions(t *testing.T) []string {
	var out []string
	re := regexp.MustCompile(`(?m)^func (Test\w+)\(`)
	for _, dir := range []string{".", "../..", "../../../../core/api/machineconfiguration/v1"} {
		files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
		require.NoError(t, err)
		for _, f := range files {
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			for _, m := range re.FindAllStringSubmatch(string(data), -1) {
				out = append(out, m[1])
			}
		}
	}
	return out
}

const (
	tableBegin = "<!-- BEGIN field table: generated from cmd/machina-node-agent/internal/machineconfig/fields.go; go test -run TestFieldTableInDocs -update -->"
	tableEnd   = "<!-- END field table -->"
)

// fieldTable renders Fields as Markdown.
func fieldTable() string {
	var b strings.Builder
	b.WriteString("| field | | how, or why not | proved by |\n|---|---|---|---|\n")
	for _, f := range Fields {
		status := "refused"
		if f.Applied {
			status = "applied"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", f.Path, status, strings.ReplaceAll(f.How, "|", "\\|"), "`"+strings.ReplaceAll(f.Test, ", ", "`, `")+"`")
	}
	return b.String()
}

// TestFieldTableInDocs: docs/machine-config.md holds the table Fields
// renders.
func TestFieldTableInDocs(t *testing.T) {
	path := "../../../../docs/machine-config.md"
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	doc := string(data)
	begin, end := strings.Index(doc, tableBegin), strings.Index(doc, tableEnd)
	require.True(t, begin >= 0 && end > begin, "docs/machine-config.md has no field table between %q and %q", tableBegin, tableEnd)
	want := doc[:begin] + tableBegin + "\n\n" + fieldTable() + "\n" + doc[end:]
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(want), 0o644))
		return
	}
	assert.Equal(t, want, doc, "docs/machine-config.md's field table is stale: go test ./cmd/machina-node-agent/internal/machineconfig -run TestFieldTableInDocs -update")
}
