package preservation

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// Value is the preserve value in force for a machine.
type Value struct {
	// Value is the effective value ("" when none is set).
	Value string
	// FromNode says it is the Node's value.
	FromNode bool
	// LastApplied is what the Machine's last-applied-node-preserve-value
	// annotation must say after this reconcile ("" removes it).
	LastApplied string
}

// Effective computes the value in force from the Machine and its Node (nil
// when it has none or it does not exist: the Machine's value is in force
// then).
func Effective(m *v1alpha1.Machine, node *corev1.Node) Value {
	last := m.Annotations[v1alpha1.LastAppliedNodePreserveValueAnnotation]
	if node == nil {
		return Value{Value: m.Annotations[v1alpha1.PreserveAnnotation], LastApplied: last}
	}
	nodeValue := node.Annotations[v1alpha1.PreserveAnnotation]
	if nodeValue == "" && last == "" {
		return Value{Value: m.Annotations[v1alpha1.PreserveAnnotation]}
	}
	return Value{Value: nodeValue, FromNode: true, LastApplied: nodeValue}
}

// validValues are the values of the preserve annotation the controller
// acts on.
var validValues = map[string]bool{
	v1alpha1.PreserveValueNow:           true,
	v1alpha1.PreserveValueWhenFailed:    true,
	v1alpha1.PreserveValueFalse:         true,
	v1alpha1.PreserveValueAutoPreserved: true,
}

// Valid reports whether v is a value of the preserve annotation the
// controller acts on; any other value is reported and ignored.
func Valid(v string) bool { return validValues[v] }
