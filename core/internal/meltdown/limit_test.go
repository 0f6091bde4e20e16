package meltdown

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

func TestParseLimit(t *testing.T) {
	for in, want := range map[string]intstr.IntOrString{
		"0":     intstr.FromInt32(0),
		"1":     intstr.FromInt32(1),
		"25%":   intstr.FromString("25%"),
		"0%":    intstr.FromString("0%"),
		"100%":  intstr.FromString("100%"),
		"150%":  intstr.FromString("150%"),
		"007%":  intstr.FromString("7%"),
		"12345": intstr.FromInt32(12345),
	} {
		got, err := ParseLimit(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	got, err := ParseLimit(" 7 ")
	require.NoError(t, err, "surrounding space is trimmed")
	assert.Equal(t, intstr.FromInt32(7), got)
	for _, bad := range []string{"", "-1", "-5%", "%", "1.5", "abc", "10 %", "ten%", "99999999999"} {
		_, err := ParseLimit(bad)
		assert.Error(t, err, "%q must not parse", bad)
	}
	assert.Equal(t, intstr.FromInt32(1), MustParseLimit(DefaultMaxReplacements))
	assert.Panics(t, func() { MustParseLimit("x") })
}

func TestResolve(t *testing.T) {
	for _, tc := range []struct {
		limit    string
		replicas int32
		want     int
	}{
		{"1", 10, 1},
		{"3", 2, 3}, // absolute numbers are not capped by replicas
		{"0", 10, 0},
		{"10%", 10, 1},
		{"10%", 5, 1}, // rounds up: 0.5 -> 1
		{"25%", 10, 3},
		{"50%", 10, 5},
		{"100%", 4, 4},
		{"10%", 0, 0},
		{"0%", 100, 0},
	} {
		got, err := resolve(MustParseLimit(tc.limit), tc.replicas)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "%s of %d", tc.limit, tc.replicas)
	}
	_, err := resolve(intstr.FromString("lots"), 3)
	assert.Error(t, err)
}

func TestLimitFor(t *testing.T) {
	md := func(replicas int32, annotation *string) *v1alpha1.MachineDeployment {
		d := &v1alpha1.MachineDeployment{Spec: v1alpha1.MachineDeploymentSpec{Replicas: replicas}}
		if annotation != nil {
			d.ObjectMeta = metav1.ObjectMeta{Annotations: map[string]string{Annotation: *annotation}}
		}
		return d
	}
	str := func(s string) *string { return &s }
	def := MustParseLimit("1")

	n, err := limitFor(md(20, nil), def)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "flag default applies without the annotation")

	n, err = limitFor(md(20, str("4")), def)
	require.NoError(t, err)
	assert.Equal(t, 4, n, "annotation overrides the flag")

	n, err = limitFor(md(20, str("15%")), def)
	require.NoError(t, err)
	assert.Equal(t, 3, n, "15% of 20 rounds up to 3")

	n, err = limitFor(md(20, str("0")), MustParseLimit("50%"))
	require.NoError(t, err)
	assert.Equal(t, 0, n, "an annotation of 0 switches replacement off for the deployment")

	n, err = limitFor(md(20, str("many")), MustParseLimit("10%"))
	var annErr *AnnotationError
	require.ErrorAs(t, err, &annErr)
	assert.Contains(t, err.Error(), Annotation)
	assert.Equal(t, 2, n, "a malformed annotation falls back to the flag")

	_, err = limitFor(md(20, nil), intstr.FromString("junk"))
	require.Error(t, err)
	assert.NotErrorAs(t, err, &annErr)
}
