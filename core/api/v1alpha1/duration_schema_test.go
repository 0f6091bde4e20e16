package v1alpha1_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/testenv"
)

// durationField is one duration field of one kind's CRD schema, with the
// API server's own CEL validator for it.
type durationField struct {
	path      string // "<Kind> spec.drainTimeout"
	schema    *structuralschema.Structural
	validator *cel.Validator
}

// kinds maps each v1alpha1 kind to its Go type, for finding its duration
// fields by reflection.
var kinds = map[string]reflect.Type{
	"Machine":           reflect.TypeFor[v1alpha1.Machine](),
	"MachineClass":      reflect.TypeFor[v1alpha1.MachineClass](),
	"MachineSet":        reflect.TypeFor[v1alpha1.MachineSet](),
	"MachineDeployment": reflect.TypeFor[v1alpha1.MachineDeployment](),
}

// durationFields loads every CRD of deploy/crds for the v1alpha1 kinds and
// returns the schema nodes that carry a duration rule.
func durationFields(t testing.TB) []durationField {
	dir, err := testenv.CRDDir()
	require.NoError(t, err)
	files, err := filepath.Glob(filepath.Join(dir, v1alpha1.GroupVersion.Group+"_*.yaml"))
	require.NoError(t, err)
	require.Len(t, files, len(kinds))
	var out []durationField
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		var crd apiextensionsv1.CustomResourceDefinition
		require.NoError(t, yaml.UnmarshalStrict(data, &crd), file)
		require.Len(t, crd.Spec.Versions, 1, file)
		var internal apiextensions.JSONSchemaProps
		require.NoError(t, apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(
			crd.Spec.Versions[0].Schema.OpenAPIV3Schema, &internal, nil))
		root, err := structuralschema.NewStructural(&internal)
		require.NoError(t, err, file)
		walkSchema(root, "", func(path string, s *structuralschema.Structural) {
			for _, r := range s.XValidations {
				if strings.Contains(r.Rule, "duration(self)") {
					out = append(out, durationField{
						path:      crd.Spec.Names.Kind + " " + path,
						schema:    s,
						validator: cel.NewValidator(s, false, celconfig.PerCallLimit),
					})
				}
			}
		})
	}
	return out
}

// walkSchema calls visit for every node of s, with its dotted path ("[]"
// for list items, "{}" for map values).
func walkSchema(s *structuralschema.Structural, path string, visit func(string, *structuralschema.Structural)) {
	if s == nil {
		return
	}
	visit(path, s)
	for name, p := range s.Properties {
		walkSchema(&p, strings.TrimPrefix(path+"."+name, "."), visit)
	}
	walkSchema(s.Items, path+"[]", visit)
	if s.AdditionalProperties != nil {
		walkSchema(s.AdditionalProperties.Structural, path+"{}", visit)
	}
}

// goDurationFields lists the JSON paths of every duration field of t, by
// reflection over the Go type; a metav1.Duration anywhere is reported with
// the prefix "metav1.Duration " because it would fail a whole list on one
// bad value.
func goDurationFields(t reflect.Type, path string, seen map[reflect.Type]bool) []string {
	switch t.Kind() {
	case reflect.Pointer:
		return goDurationFields(t.Elem(), path, seen)
	case reflect.Slice, reflect.Array:
		return goDurationFields(t.Elem(), path+"[]", seen)
	case reflect.Map:
		return goDurationFields(t.Elem(), path+"{}", seen)
	case reflect.Struct:
	default:
		return nil
	}
	switch t {
	case reflect.TypeFor[v1alpha1.Duration]():
		return []string{path}
	case reflect.TypeFor[metav1.Duration]():
		return []string{"metav1.Duration " + path}
	case reflect.TypeFor[metav1.ObjectMeta](), reflect.TypeFor[metav1.TypeMeta](), reflect.TypeFor[metav1.Time]():
		return nil
	}
	if seen[t] {
		return nil
	}
	seen[t] = true
	defer delete(seen, t)
	var out []string
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		p := path
		if name != "" || !(f.Anonymous || strings.Contains(opts, "inline")) {
			if name == "" {
				name = f.Name
			}
			p = strings.TrimPrefix(path+"."+name, ".")
		}
		out = append(out, goDurationFields(f.Type, p, seen)...)
	}
	return out
}

// TestEveryDurationFieldHasTheRule checks that every duration field of every
// kind, found from the Go types, carries the duration rule in the generated
// CRD, and that no metav1.Duration (whose decoding fails a whole list) is
// left in the API.
func TestEveryDurationFieldHasTheRule(t *testing.T) {
	var want []string
	for kind, typ := range kinds {
		for _, p := range goDurationFields(typ, "", map[reflect.Type]bool{}) {
			want = append(want, kind+" "+p)
		}
	}
	var got []string
	for _, f := range durationFields(t) {
		got = append(got, f.path)
	}
	slices.Sort(want)
	slices.Sort(got)
	assert.Equal(t, want, got)
	// Six per kind that holds a machine spec, and a deployment's budget
	// window: a field lost from the walk would otherwise go unnoticed on
	// both sides.
	assert.Len(t, got, 19)
}

// durationSeeds are the edge cases of Go's duration grammar and of the
// bounds.
var durationSeeds = []string{
	"", "0", "+0", "-0", "00", "0s", "1", "10m", "2h30m", "1h1h", ".5s", "5.s", ".s", "1.5µs", "1.5μs", "1us",
	"1ns", "-1ns", "-5m", "+5m", "87600h", "87600h0m0.000000001s", "87599h59m59.999999999s", "87601h",
	"9999999999h", "2562047h47m16.854775807s", "2562047h47m16.854775808s", "9223372036854775807ns",
	"9223372036854775808ns", "1e3s", "1 h", " 1h", "1h ", "1H", "ten minutes", "1d", "0x10s",
	"1.0000000000000000000000001h", "0.000000000000000000001ns", "1h-1m", "--1h", "+-1h",
	"99999h", "100000h", "9999999m", "999999999s", "999999999999ms", "999999999999999us", "999999999999999999ns",
	"9999999999999999999ns", "0000000000000000000000000000000000000000000000000000000000087600h",
	"00000000000000000000000000000000000000000000000000000000000087600h", "1.000000000000000000000000000000000000000000000000000000000000h",
	"87600h87600h87600h87600h87600h87600h87600h87600h87600h87600h", "999999999s999999999s999999999s999999999s999999999s999999999s",
	"1µs1μs1us", strings.Repeat("1ns", 21), strings.Repeat("1ns", 22),
}

// FuzzDurationSchema checks the CRD's duration rule against Go's parser: for
// every duration field of every kind, the API server's CEL validator admits
// a string exactly when v1alpha1.CheckDuration does (Go parses it, from 0 to
// MaxDuration). And decoding never fails: a refused string decodes into a
// Duration whose Err says why, and encodes back unchanged.
func FuzzDurationSchema(f *testing.F) {
	fields := durationFields(f)
	require.NotEmpty(f, fields)
	for _, s := range durationSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// What the API server sees after its JSON decoding (invalid UTF-8
		// becomes U+FFFD).
		raw, err := json.Marshal(s)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(raw, &s))

		want := v1alpha1.CheckDuration(s)
		for _, fd := range fields {
			errs, _ := fd.validator.Validate(t.Context(), field.NewPath("x"), fd.schema, s, nil, celconfig.RuntimeCELCostBudget)
			if want == nil {
				require.Empty(t, errs, "%s: CEL refuses %q, which Go accepts", fd.path, s)
			} else {
				require.NotEmpty(t, errs, "%s: CEL admits %q, which Go refuses: %v", fd.path, s, want)
			}
			for _, e := range errs {
				// The rule is false, never an evaluation error: the API
				// server ratchets only the former, so an error would
				// block every update of an object stored with the value.
				require.Contains(t, e.Detail, "must be a Go duration", "%s: %q: %v", fd.path, s, e)
				require.NotContains(t, e.Detail, "evaluating rule", "%s: %q: %v", fd.path, s, e)
			}
		}

		var d v1alpha1.Duration
		require.NoError(t, json.Unmarshal(raw, &d), "decoding never fails")
		if want == nil {
			require.NoError(t, d.Err())
			back, err := json.Marshal(d)
			require.NoError(t, err)
			require.Equal(t, `"`+d.Duration.String()+`"`, string(back), "a valid value encodes as metav1.Duration does")
		} else {
			require.Error(t, d.Err())
			back, err := json.Marshal(d)
			require.NoError(t, err)
			require.Equal(t, string(raw), string(back), "an invalid value is written back as read")
		}
	})
}

// TestDurationWire checks that Duration and metav1.Duration are the same on
// the wire for valid values, so MCM clients read what machina writes.
func TestDurationWire(t *testing.T) {
	for _, s := range []string{"0s", "10m", "2h30m", "87600h", "1.5s"} {
		var ours v1alpha1.Duration
		var theirs metav1.Duration
		require.NoError(t, json.Unmarshal([]byte(`"`+s+`"`), &ours))
		require.NoError(t, json.Unmarshal([]byte(`"`+s+`"`), &theirs))
		assert.Equal(t, theirs.Duration, ours.Duration, s)
		a, err := json.Marshal(ours)
		require.NoError(t, err)
		b, err := json.Marshal(theirs)
		require.NoError(t, err)
		assert.Equal(t, string(b), string(a), s)
		assert.Equal(t, theirs.ToUnstructured(), ours.ToUnstructured(), s)
	}
}

// TestListWithOneBadDurationDecodes is the failure the type exists for: a
// list holding one machine with an undecodable duration decodes, the bad
// machine says which field is wrong, and the others are untouched.
func TestListWithOneBadDurationDecodes(t *testing.T) {
	list := `{"items":[
		{"metadata":{"name":"good"},"spec":{"class":{"name":"c"},"drainTimeout":"2h"}},
		{"metadata":{"name":"bad"},"spec":{"class":{"name":"c"},"drainTimeout":"9999999999h","healthTimeout":"-1m","creationTimeout":7}}]}`
	var machines v1alpha1.MachineList
	require.NoError(t, json.Unmarshal([]byte(list), &machines))
	require.Len(t, machines.Items, 2)
	assert.Equal(t, 2*time.Hour, machines.Items[0].Spec.MachineDrainTimeout.Duration)
	assert.Empty(t, machines.Items[0].Spec.MachineConfiguration.InvalidDurations())
	bad := machines.Items[1].Spec.MachineConfiguration.InvalidDurations()
	require.Len(t, bad, 3)
	assert.Contains(t, bad[0], "drainTimeout")
	assert.Contains(t, bad[0], "9999999999h")
	assert.Contains(t, bad[1], "healthTimeout")
	assert.Contains(t, bad[1], "negative")
	assert.Contains(t, bad[2], "creationTimeout")

	// Written back, every value is as it was read: an update loses nothing.
	out, err := json.Marshal(machines.Items[1].Spec)
	require.NoError(t, err)
	assert.Contains(t, string(out), `"drainTimeout":"9999999999h"`)
	assert.Contains(t, string(out), `"healthTimeout":"-1m"`)
	assert.Contains(t, string(out), `"creationTimeout":7`)
	// A deep copy keeps the verdict, and the API machinery's semantic
	// equality (which panics on unexported fields) compares machines.
	cp := machines.Items[1].DeepCopy()
	assert.Equal(t, bad, cp.Spec.MachineConfiguration.InvalidDurations())
	assert.True(t, apiequality.Semantic.DeepEqual(machines.Items[1], *cp))
	assert.False(t, apiequality.Semantic.DeepEqual(machines.Items[0], machines.Items[1]))
}
