package preservation

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

func machineAnnotated(kv ...string) *v1alpha1.Machine {
	m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{}}}
	for i := 0; i+1 < len(kv); i += 2 {
		m.Annotations[kv[i]] = kv[i+1]
	}
	return m
}

func nodeAnnotated(kv ...string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{}}}
	for i := 0; i+1 < len(kv); i += 2 {
		n.Annotations[kv[i]] = kv[i+1]
	}
	return n
}

// The Node's value wins while it is set or while the Machine records that
// it was in force; otherwise the Machine's value is.
func TestEffective(t *testing.T) {
	const (
		preserve = v1alpha1.PreserveAnnotation
		last     = v1alpha1.LastAppliedNodePreserveValueAnnotation
	)
	for _, c := range []struct {
		name string
		m    *v1alpha1.Machine
		node *corev1.Node
		want Value
	}{
		{"nothing", machineAnnotated(), nodeAnnotated(), Value{}},
		{"the machine's, no node", machineAnnotated(preserve, "now"), nil, Value{Value: "now"}},
		{"no node keeps last-applied", machineAnnotated(preserve, "now", last, "when-failed"), nil, Value{Value: "now", LastApplied: "when-failed"}},
		{"the machine's, node without a value", machineAnnotated(preserve, "when-failed"), nodeAnnotated(), Value{Value: "when-failed"}},
		{"the node's wins", machineAnnotated(preserve, "now"), nodeAnnotated(preserve, "false"), Value{Value: "false", FromNode: true, LastApplied: "false"}},
		{"the node's removed stops", machineAnnotated(preserve, "now", last, "now"), nodeAnnotated(), Value{FromNode: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, Effective(c.m, c.node))
		})
	}
}

func TestValid(t *testing.T) {
	for _, v := range []string{v1alpha1.PreserveValueNow, v1alpha1.PreserveValueWhenFailed, v1alpha1.PreserveValueFalse, v1alpha1.PreserveValueAutoPreserved} {
		assert.True(t, Valid(v), v)
	}
	for _, v := range []string{"", "forever", "Now", "true"} {
		assert.False(t, Valid(v), v)
	}
}
