package machineclass

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

func TestDescribeReferrers(t *testing.T) {
	refs := []referrer{
		{"MachineSet", "s"}, {"Machine", "m3"}, {"Machine", "m1"}, {"MachineDeployment", "d"},
		{"Machine", "m2"}, {"Machine", "m5"}, {"Machine", "m4"},
	}
	assert.Equal(t, "Machine m1, Machine m2, Machine m3, Machine m4, Machine m5 and 2 more", describeReferrers(refs))
	assert.Equal(t, "MachineSet s", describeReferrers(refs[:1]))
	// The input order is left alone.
	assert.Equal(t, "MachineSet", refs[0].kind)
}

func TestRefersToClass(t *testing.T) {
	for _, tc := range []struct {
		ref  v1alpha1.ClassSpec
		want bool
	}{
		{v1alpha1.ClassSpec{Name: "c"}, true},
		{v1alpha1.ClassSpec{Kind: "MachineClass", Name: "c"}, true},
		{v1alpha1.ClassSpec{APIGroup: "machine.sapcloud.io", Kind: "MachineClass", Name: "c"}, true},
		{v1alpha1.ClassSpec{Kind: "MachineClass"}, false},
		{v1alpha1.ClassSpec{Kind: "AWSMachineClass", Name: "c"}, false},
		{v1alpha1.ClassSpec{APIGroup: "example.com", Kind: "MachineClass", Name: "c"}, false},
	} {
		assert.Equal(t, tc.want, RefersToClass(tc.ref), "%+v", tc.ref)
	}
}
