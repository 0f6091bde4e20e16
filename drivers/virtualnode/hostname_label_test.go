package virtualnode

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/util/validation"
)

// TestHostnameLabelValue: a Node for a machine name of up to 253
// characters gets a valid kubernetes.io/hostname label.
func TestHostnameLabelValue(t *testing.T) {
	assert.Equal(t, "worker-1", hostnameLabelValue("worker-1"))
	fqdn := "worker-1." + strings.Repeat("a", 63) + ".example"
	assert.Equal(t, "worker-1", hostnameLabelValue(fqdn))
	long := strings.Repeat("b", 70) + ".example"
	got := hostnameLabelValue(long)
	assert.Empty(t, validation.IsValidLabelValue(got), "label value %q", got)
	assert.NotEqual(t, got, hostnameLabelValue(strings.Repeat("c", 70)+".example"))
}
