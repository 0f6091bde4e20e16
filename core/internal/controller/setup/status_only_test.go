package setup

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// TestNotOnlyStatus: a write of the status alone does not sync the object
// again; any change of spec or metadata a controller acts on does.
func TestNotOnlyStatus(t *testing.T) {
	base := &v1alpha1.MachineSet{ObjectMeta: metav1.ObjectMeta{
		Name: "set", Namespace: "ns", Generation: 3, ResourceVersion: "10",
		Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"c": "d"}, Finalizers: []string{"f"},
	}}
	passes := func(change func(*v1alpha1.MachineSet)) bool {
		n := base.DeepCopy()
		n.ResourceVersion = "11"
		change(n)
		return NotOnlyStatus().Update(event.UpdateEvent{ObjectOld: base, ObjectNew: n})
	}
	assert.False(t, passes(func(n *v1alpha1.MachineSet) { n.Status.Replicas = 7; n.Status.ObservedGeneration = 3 }), "status alone")
	assert.True(t, passes(func(n *v1alpha1.MachineSet) { n.Generation = 4; n.Spec.Replicas = 2 }), "spec")
	assert.True(t, passes(func(n *v1alpha1.MachineSet) { n.Labels["a"] = "x" }), "a label")
	assert.True(t, passes(func(n *v1alpha1.MachineSet) { n.Annotations["e"] = "f" }), "an annotation")
	assert.True(t, passes(func(n *v1alpha1.MachineSet) { n.Finalizers = nil }), "finalizers")
	assert.True(t, passes(func(n *v1alpha1.MachineSet) {
		n.OwnerReferences = []metav1.OwnerReference{{Kind: "MachineDeployment", Name: "d", UID: "u"}}
	}), "owners")
	assert.True(t, passes(func(n *v1alpha1.MachineSet) { now := metav1.Now(); n.DeletionTimestamp = &now }), "deletion")
	assert.True(t, NotOnlyStatus().Create(event.CreateEvent{Object: base}), "creates pass")
}
