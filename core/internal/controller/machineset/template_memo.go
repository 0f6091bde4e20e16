package machineset

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// templateMemo remembers, per set, which machines were in sync with the
// set's template when last compared, by the generations of both: a machine
// whose spec generation and whose set's generation have not moved since
// needs no compare. A set syncs after most changes of any of its machines,
// and comparing every machine's node template each time made the template
// sync O(machines) per sync, O(machines²) per scale-up (11% of the
// manager's CPU at 5000 machines, docs/performance.md).
type templateMemo struct {
	mu   sync.Mutex
	sets map[types.NamespacedName]*setMemo
}

// setMemo is one set's memo: valid for one object (uid) at one generation.
type setMemo struct {
	uid        types.UID
	generation int64
	// inSync maps a machine's UID to the spec generation at which it
	// matched the template.
	inSync map[types.UID]int64
}

// forSet returns the memo of ms, empty when ms is another object than the
// one remembered or its template may have changed (a new generation). Only
// the set's own sync uses it: a controller never runs one key twice at once.
func (t *templateMemo) forSet(ms *v1alpha1.MachineSet) *setMemo {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sets == nil {
		t.sets = map[types.NamespacedName]*setMemo{}
	}
	key := types.NamespacedName{Namespace: ms.Namespace, Name: ms.Name}
	m := t.sets[key]
	if m == nil || m.uid != ms.UID || m.generation != ms.Generation {
		m = &setMemo{uid: ms.UID, generation: ms.Generation, inSync: map[types.UID]int64{}}
		t.sets[key] = m
	}
	return m
}

// forget drops the memo of a set that is gone.
func (t *templateMemo) forget(key types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.sets, key)
}

// inSyncAt reports whether m was in sync at its current generation.
func (s *setMemo) inSyncAt(m *v1alpha1.Machine) bool {
	g, ok := s.inSync[m.UID]
	return ok && g == m.Generation
}

// prune keeps the memo to the machines the set has now, once the
// machines it no longer has (deleted, released) have piled up.
func (s *setMemo) prune(machines []*v1alpha1.Machine) {
	if len(s.inSync) <= 2*len(machines)+64 {
		return
	}
	kept := make(map[types.UID]int64, len(machines))
	for _, m := range machines {
		if g, ok := s.inSync[m.UID]; ok {
			kept[m.UID] = g
		}
	}
	s.inSync = kept
}
