package machinedeployment

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// A machine just moved to the new set, that the cache still shows in its
// old set, is taken where it moved: its node, cleaned in the move's sync,
// must not be made a candidate (and updated) again by the next sync.
func TestMovedMachinesStandInForALaggingCache(t *testing.T) {
	oldSet := &v1alpha1.MachineSet{ObjectMeta: metav1.ObjectMeta{Name: "old", UID: "old-uid"}}
	newSet := &v1alpha1.MachineSet{ObjectMeta: metav1.ObjectMeta{Name: "new", UID: "new-uid"}}
	machine := func(name string, owner *v1alpha1.MachineSet) *v1alpha1.Machine {
		return &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name + "-uid"),
			OwnerReferences: []metav1.OwnerReference{{Kind: "MachineSet", Name: owner.Name, UID: owner.UID, Controller: ptr.To(true)}}}}
	}
	stale, other := machine("a", oldSet), machine("b", oldSet)
	scopeWith := func(machines map[types.UID][]*v1alpha1.Machine) *scope {
		return &scope{now: t0, sets: []*v1alpha1.MachineSet{oldSet, newSet}, new: newSet, old: []*v1alpha1.MachineSet{oldSet}, machines: machines}
	}

	var mm movedMachines
	mm.add(stale.UID, newSet.UID, t0)

	s := scopeWith(map[types.UID][]*v1alpha1.Machine{oldSet.UID: {stale, other}})
	mm.apply(s)
	assert.Equal(t, []*v1alpha1.Machine{other}, s.machines[oldSet.UID], "the moved machine is no longer the old set's")
	assert.Equal(t, []*v1alpha1.Machine{stale}, s.machines[newSet.UID], "the moved machine is the new set's")

	// The cache caught up: nothing to fix, and the move is forgotten.
	fresh := machine("a", newSet)
	s = scopeWith(map[types.UID][]*v1alpha1.Machine{oldSet.UID: {other}, newSet.UID: {fresh}})
	mm.apply(s)
	assert.Equal(t, []*v1alpha1.Machine{other}, s.machines[oldSet.UID])
	assert.Equal(t, []*v1alpha1.Machine{fresh}, s.machines[newSet.UID])
	_, remembered := mm.to.Get(stale.UID, t0)
	assert.False(t, remembered, "a move the cache shows is forgotten")

	// A move the cache never shows (the machine went) is forgotten after
	// movedTTL; a set that is not the deployment's is left alone.
	mm.add(stale.UID, "gone-set", t0)
	s = scopeWith(map[types.UID][]*v1alpha1.Machine{oldSet.UID: {stale}})
	mm.apply(s)
	assert.Equal(t, []*v1alpha1.Machine{stale}, s.machines[oldSet.UID])
	s.now = t0.Add(movedTTL)
	mm.apply(s)
	_, remembered = mm.to.Get(stale.UID, s.now)
	assert.True(t, remembered, "a move is remembered for movedTTL")
	s.now = t0.Add(movedTTL + 1)
	mm.apply(s)
	assert.Equal(t, []*v1alpha1.Machine{stale}, s.machines[oldSet.UID])
	_, remembered = mm.to.Get(stale.UID, t0) // asked at t0: gone, not just expired
	assert.False(t, remembered, "a move older than movedTTL is forgotten")
}
