package v1alpha1_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// loadFixtures reads every YAML document of testdata/<name> as an
// unstructured object, in the given namespace.
func loadFixtures(t *testing.T, name, namespace string) []*unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	reader := k8syaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	var objs []*unstructured.Unstructured
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		js, err := yaml.YAMLToJSON(doc)
		require.NoError(t, err)
		if string(js) == "null" {
			continue // a document holding only comments
		}
		u := &unstructured.Unstructured{}
		// UnmarshalJSON keeps integers as int64, as the API machinery does.
		require.NoError(t, u.UnmarshalJSON(js), "fixture %s", name)
		u.SetNamespace(namespace)
		objs = append(objs, u)
	}
	require.NotEmpty(t, objs, "fixture %s has no objects", name)
	return objs
}

// containsAll reports where got lacks or differs from a value in want: every
// map key of want must be in got with an equal value, lists must match
// element by element. Extra keys in got (defaults, server metadata) are fine.
// Two strings that parse as the same Go duration are equal, because
// v1alpha1.Duration (like metav1.Duration) renders "2h" back as "2h0m0s". With omitZero, a key that
// got lacks is fine when want's value is a zero number, false or "": Go
// fields tagged omitempty drop those.
func containsAll(path string, want, got any, omitZero bool) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: want an object, got %T (%v)", path, got, got)}
		}
		var diffs []string
		for k, wv := range w {
			gv, ok := g[k]
			if !ok && omitZero && isZero(wv) {
				continue
			}
			if !ok {
				diffs = append(diffs, fmt.Sprintf("%s.%s: missing (want %v)", path, k, wv))
				continue
			}
			diffs = append(diffs, containsAll(path+"."+k, wv, gv, omitZero)...)
		}
		return diffs
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: want list %v, got %v", path, w, got)}
		}
		var diffs []string
		for i := range w {
			diffs = append(diffs, containsAll(fmt.Sprintf("%s[%d]", path, i), w[i], g[i], omitZero)...)
		}
		return diffs
	case string:
		if g, ok := got.(string); ok && (g == w || sameDuration(w, g)) {
			return nil
		}
	default:
		if want == got {
			return nil
		}
	}
	return []string{fmt.Sprintf("%s: want %v (%T), got %v (%T)", path, want, want, got, got)}
}

func isZero(v any) bool {
	switch v := v.(type) {
	case int64:
		return v == 0
	case float64:
		return v == 0
	case bool:
		return !v
	case string:
		return v == ""
	}
	return false
}

func sameDuration(a, b string) bool {
	da, errA := time.ParseDuration(a)
	db, errB := time.ParseDuration(b)
	return errA == nil && errB == nil && da == db
}

// requireContainsAll fails the test when got lacks or changes a field of want.
func requireContainsAll(t *testing.T, what string, want, got map[string]any, omitZero bool) {
	t.Helper()
	// Server-set metadata is not part of the comparison.
	w := make(map[string]any, len(want))
	for k, v := range want {
		if k != "metadata" {
			w[k] = v
		}
	}
	if diffs := containsAll("", w, got, omitZero); len(diffs) > 0 {
		t.Fatalf("%s lost or changed manifest fields:\n%s", what, joinLines(diffs))
	}
}

func joinLines(lines []string) string {
	var b bytes.Buffer
	for _, l := range lines {
		b.WriteString("  ")
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

// TestContainsAll checks the comparison itself, so that a round-trip test
// using it cannot pass by accident.
func TestContainsAll(t *testing.T) {
	want := map[string]any{"a": map[string]any{"b": int64(1), "d": "2h"}, "l": []any{"x"}}
	require.Empty(t, containsAll("", want, map[string]any{
		"a": map[string]any{"b": int64(1), "d": "2h0m0s", "extra": true}, "l": []any{"x"},
	}, false))
	require.Len(t, containsAll("", want, map[string]any{"a": map[string]any{"d": "2h"}, "l": []any{"x"}}, false), 1)
	require.Len(t, containsAll("", want, map[string]any{"a": map[string]any{"b": int64(2), "d": "1h"}, "l": []any{}}, false), 3)
	require.Len(t, containsAll("", map[string]any{"s": "50%"}, map[string]any{"s": int64(50)}, false), 1)

	zero := map[string]any{"n": int64(0), "b": false, "s": "", "one": int64(1)}
	require.Len(t, containsAll("", zero, map[string]any{"one": int64(1)}, false), 3)
	require.Empty(t, containsAll("", zero, map[string]any{"one": int64(1)}, true))
	require.Len(t, containsAll("", zero, map[string]any{}, true), 1, "omitZero must not excuse a missing non-zero value")
}
