package machineconfig

import (
	"encoding/json"
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
		if !f.Applied {
			assert.True(t, strings.Contains(f.How, "refused") || strings.Contains(f.How, "Unreconcilable"),
				"%s: a refused row says where it is refused", f.Path)
		}
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

// TestRefusedRowsAreRefused: every row of the Ignition config that the
// table calls refused is refused at runtime: a config that sets only that
// field (to a value that is not empty) fails ParseIgnition, which both the
// render controller and the agent (Unreconcilable) run, and the error
// names the field. A row marked refused whose field were silently
// accepted fails here.
func TestRefusedRowsAreRefused(t *testing.T) {
	const prefix = "spec.config."
	checked := 0
	for _, f := range Fields {
		if f.Applied || !strings.HasPrefix(f.Path, prefix) {
			continue
		}
		config, want := configSetting(t, strings.TrimPrefix(f.Path, prefix))
		raw, err := json.Marshal(config)
		require.NoError(t, err)
		_, err = mcv1.ParseIgnition(raw)
		assert.ErrorContains(t, err, want+" (", "%s: %s", f.Path, raw)
		checked++
	}
	assert.Greater(t, checked, 20, "the refused rows of the Ignition config")
}

// configSetting returns an Ignition 3.5.0 config that sets the field at
// path (as in Fields, without "spec.config.") and nothing else but what
// makes its list element valid (a user's name core, a file's path), and
// the field as ParseIgnition names it ("passwd.users[0].gecos").
func configSetting(t *testing.T, path string) (map[string]any, string) {
	t.Helper()
	config := map[string]any{"ignition": map[string]any{"version": "3.5.0"}}
	obj, typ := config, reflect.TypeFor[mcv1.Ignition]()
	segments := strings.Split(path, ".")
	var named []string
	for i, seg := range segments {
		name, list := strings.CutSuffix(seg, "[]")
		field, ok := jsonField(typ, name)
		require.True(t, ok, "%s: no field %s in %s", path, name, typ)
		typ = field
		if list {
			named = append(named, name+"[0]")
		} else {
			named = append(named, name)
		}
		if i == len(segments)-1 {
			obj[name] = nonEmpty(t, typ)
			break
		}
		if list {
			elem := map[string]any{}
			switch name {
			case "users":
				elem["name"] = mcv1.CoreUser
			case "files":
				elem["path"] = "/etc/refused"
			}
			obj[name] = []any{elem}
			obj, typ = elem, typ.Elem()
			continue
		}
		next, ok := obj[name].(map[string]any)
		if !ok {
			next = map[string]any{}
			obj[name] = next
		}
		obj = next
	}
	return config, strings.Join(named, ".")
}

// jsonField is the type of t's field whose JSON name is name.
func jsonField(t reflect.Type, name string) (reflect.Type, bool) {
	for f := range t.Fields() {
		if n, _, _ := strings.Cut(f.Tag.Get("json"), ","); n == name {
			return f.Type, true
		}
	}
	return nil, false
}

// nonEmpty is a value of type t that says something: raw JSON sections
// get a list holding an object, pointers their element's value.
func nonEmpty(t *testing.T, typ reflect.Type) any {
	t.Helper()
	if typ == reflect.TypeFor[json.RawMessage]() {
		return []any{map[string]any{"name": "x"}}
	}
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	switch typ.Kind() {
	case reflect.String:
		return "x"
	case reflect.Int:
		return 1000
	case reflect.Bool:
		return true
	}
	t.Fatalf("no value for a field of type %s", typ)
	return nil
}
