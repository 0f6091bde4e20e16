package machineset

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

func TestTemplateMemo(t *testing.T) {
	var memo templateMemo
	ms := &v1alpha1.MachineSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", UID: "set-1", Generation: 3}}
	m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{UID: "m-1", Generation: 7}}

	s := memo.forSet(ms)
	assert.False(t, s.inSyncAt(m), "nothing is remembered at first")
	s.inSync[m.UID] = m.Generation
	assert.True(t, memo.forSet(ms).inSyncAt(m), "remembered for the same set at the same generations")

	m.Generation++
	assert.False(t, memo.forSet(ms).inSyncAt(m), "a machine whose spec changed is compared again")
	m.Generation--

	ms.Generation++
	assert.False(t, memo.forSet(ms).inSyncAt(m), "a new template generation empties the memo")
	memo.forSet(ms).inSync[m.UID] = m.Generation

	replaced := ms.DeepCopy()
	replaced.UID = "set-2"
	assert.False(t, memo.forSet(replaced).inSyncAt(m), "a new set of the same name starts empty")

	memo.forget(types.NamespacedName{Namespace: "ns", Name: "s"})
	assert.Empty(t, memo.sets)
}

func TestTemplateMemoPrunesGoneMachines(t *testing.T) {
	s := &setMemo{inSync: map[types.UID]int64{}}
	var now []*v1alpha1.Machine
	for i := range 200 {
		s.inSync[types.UID(fmt.Sprint("gone-", i))] = 1
	}
	for i := range 10 {
		m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{UID: types.UID(fmt.Sprint("m-", i)), Generation: 1}}
		s.inSync[m.UID] = 1
		now = append(now, m)
	}
	s.prune(now)
	assert.Len(t, s.inSync, 10, "only the set's machines are kept")
	for _, m := range now {
		assert.True(t, s.inSyncAt(m))
	}
}

// BenchmarkTemplateSync is one template sync of a set of 5000 machines
// that are all in sync, as after each machine event of a scale-up: with
// the memo cold (every machine compared, as before templateMemo) and warm.
func BenchmarkTemplateSync(b *testing.B) {
	ms := &v1alpha1.MachineSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", UID: "set", Generation: 2}}
	ms.Spec.Template.Spec.NodeTemplateSpec.Labels = map[string]string{"role": "worker", "pool": "a"}
	ms.Spec.Template.Spec.NodeTemplateSpec.Annotations = map[string]string{"team": "x"}
	machines := make([]*v1alpha1.Machine, 5000)
	for i := range machines {
		m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("m-", i), UID: types.UID(fmt.Sprint("m-", i)), Generation: 1}}
		m.Spec.NodeTemplateSpec = *ms.Spec.Template.Spec.NodeTemplateSpec.DeepCopy()
		machines[i] = m
	}
	ctx := context.Background()
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			r := &Reconciler{}
			if err := r.syncTemplateToMachines(ctx, ms, machines); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("warm", func(b *testing.B) {
		r := &Reconciler{}
		if err := r.syncTemplateToMachines(ctx, ms, machines); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if err := r.syncTemplateToMachines(ctx, ms, machines); err != nil {
				b.Fatal(err)
			}
		}
	})
}
