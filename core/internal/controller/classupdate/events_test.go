package classupdate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// TestMachineEvents: a machine event reaches the class's reconcile only
// when the reconcile may have to act on the machine, judged against the
// class's hash as its last reconcile computed it.
func TestMachineEvents(t *testing.T) {
	machine := func(providerID, hash string, mutate ...func(*v1alpha1.Machine)) *v1alpha1.Machine {
		m := &v1alpha1.Machine{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m", Annotations: map[string]string{}},
			Spec:       v1alpha1.MachineSpec{ProviderID: providerID, Class: v1alpha1.ClassSpec{Kind: "MachineClass", Name: "c"}},
		}
		if hash != "" {
			m.Annotations[v1alpha1.ClassHashAnnotation] = hash
		}
		for _, f := range mutate {
			f(m)
		}
		return m
	}
	update := func(r *Reconciler, o, n *v1alpha1.Machine) bool {
		return r.machineEvents().Update(event.UpdateEvent{ObjectOld: o, ObjectNew: n})
	}
	create := func(r *Reconciler, m *v1alpha1.Machine) bool {
		return r.machineEvents().Create(event.CreateEvent{Object: m})
	}
	deleting := func(m *v1alpha1.Machine) { now := metav1.Now(); m.DeletionTimestamp = &now }
	running := func(m *v1alpha1.Machine) { m.Status.CurrentStatus.Phase = v1alpha1.MachineRunning }

	unknown := &Reconciler{}
	assert.True(t, update(unknown, machine("", ""), machine("vm://1", "h1")), "a VM of a class not reconciled yet")
	assert.True(t, create(unknown, machine("vm://1", "h1")), "a machine of a class not reconciled yet")

	r := &Reconciler{}
	r.hashes.Store(client.ObjectKey{Namespace: "ns", Name: "c"}, "h1")
	assert.False(t, update(r, machine("", ""), machine("vm://1", "h1")), "a new VM of the current contents")
	assert.False(t, create(r, machine("", "")), "a new machine without a VM")
	assert.False(t, create(r, machine("vm://1", "h1")), "a machine of the current contents")
	assert.False(t, update(r, machine("vm://1", "h0"), machine("vm://1", "h0", running)), "a status change")
	assert.True(t, update(r, machine("", ""), machine("vm://1", "h0")), "a new VM of old contents")
	assert.True(t, create(r, machine("vm://1", "h0")), "a machine of old contents")
	assert.True(t, create(r, machine("vm://1", "")), "a VM without a record (stamp)")
	assert.True(t, update(r, machine("vm://1", "h0"), machine("vm://1", "h1")), "a machine leaving old contents")
	assert.True(t, update(r, machine("vm://1", "h1"), machine("vm://1", "h1", deleting)), "a machine being deleted")
	assert.True(t, update(r, machine("vm://1", "h1"), machine("vm://1", "h1", func(m *v1alpha1.Machine) { m.Spec.Class.Name = "other" })),
		"a machine moved to a class not reconciled yet")
}
