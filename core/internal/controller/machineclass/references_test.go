package machineclass

import (
	"testing"

	"github.com/stretchr/testify/assert"
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
