package v1alpha1_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

func TestRefersToMachineClass(t *testing.T) {
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
		assert.Equal(t, tc.want, tc.ref.RefersToMachineClass(), "%+v", tc.ref)
	}
}
