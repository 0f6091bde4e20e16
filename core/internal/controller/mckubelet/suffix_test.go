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

func withSuffix(uid, pool, suffix string) mcfgv1.KubeletConfig {
	return mcfgv1.KubeletConfig{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid),
		Annotations: map[string]string{mcfgv1.MCNameSuffixAnnotation: suffix}},
		Spec: mcfgv1.KubeletConfigSpec{MachineConfigPoolSelector: &metav1.LabelSelector{
			MatchLabels: map[string]string{"pool": pool}}}}
}

func pool(name string) mcfgv1.MachineConfigPool {
	return mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pool": name}}}
}

func TestChooseSuffix(t *testing.T) {
	me := &mcfgv1.KubeletConfig{ObjectMeta: metav1.ObjectMeta{UID: "me"}}
	infra := []mcfgv1.MachineConfigPool{pool("infra")}
	s, err := chooseSuffix(me, nil, infra)
	require.NoError(t, err)
	assert.Equal(t, "", s)

	s, err = chooseSuffix(me, []mcfgv1.KubeletConfig{withSuffix("a", "infra", ""), withSuffix("b", "infra", "2"),
		{ObjectMeta: metav1.ObjectMeta{UID: "c"}}}, infra)
	require.NoError(t, err)
	assert.Equal(t, "1", s, "the lowest free; one without a suffix yet holds none")

	s, err = chooseSuffix(me, []mcfgv1.KubeletConfig{withSuffix("a", "worker", ""), withSuffix("b", "worker", "1"),
		withSuffix("c", "worker", "2"), withSuffix("d", "worker", "3")}, infra)
	require.NoError(t, err)
	assert.Equal(t, "", s, "suffixes count per pool: worker's do not take infra's")

	s, err = chooseSuffix(me, []mcfgv1.KubeletConfig{withSuffix("a", "worker", ""), withSuffix("b", "infra", "1")},
		[]mcfgv1.MachineConfigPool{pool("infra"), pool("worker")})
	require.NoError(t, err)
	assert.Equal(t, "2", s, "free in every pool it selects")

	all := []mcfgv1.KubeletConfig{withSuffix("a", "infra", "")}
	for i := 1; i <= 9; i++ {
		all = append(all, withSuffix(strconv.Itoa(i), "infra", strconv.Itoa(i)))
	}
	_, err = chooseSuffix(me, all, infra)
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
