package mckubelet

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	mcfgv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
)

func withSuffix(uid, suffix string) mcfgv1.KubeletConfig {
	return mcfgv1.KubeletConfig{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid),
		Annotations: map[string]string{mcfgv1.MCNameSuffixAnnotation: suffix}}}
}

func TestChooseSuffix(t *testing.T) {
	me := &mcfgv1.KubeletConfig{ObjectMeta: metav1.ObjectMeta{UID: "me"}}
	s, err := chooseSuffix(me, nil)
	require.NoError(t, err)
	assert.Equal(t, "", s)

	s, err = chooseSuffix(me, []mcfgv1.KubeletConfig{withSuffix("a", ""), withSuffix("b", "2"), {ObjectMeta: metav1.ObjectMeta{UID: "c"}}})
	require.NoError(t, err)
	assert.Equal(t, "1", s, "the lowest free; one without a suffix yet holds none")

	all := []mcfgv1.KubeletConfig{withSuffix("a", "")}
	for i := 1; i <= 9; i++ {
		all = append(all, withSuffix(strconv.Itoa(i), strconv.Itoa(i)))
	}
	_, err = chooseSuffix(me, all)
	assert.ErrorContains(t, err, "at most 10")
	assert.Equal(t, "99-worker-generated-kubelet-3", generatedName("worker", "3"))
}

func TestMergeConfig(t *testing.T) {
	got := mergeConfig(
		map[string]any{"a": 1, "m": map[string]any{"x": "1", "y": "2"}, "l": []any{"p", "q"}},
		map[string]any{"m": map[string]any{"y": "3"}, "l": []any{"r"}, "b": true},
	)
	assert.Equal(t, map[string]any{"a": 1, "b": true, "m": map[string]any{"x": "1", "y": "3"}, "l": []any{"r"}}, got)
}
