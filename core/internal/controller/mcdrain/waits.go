package mcdrain

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/machina-io/machina/core/internal/drain"
)

// The volume wait of a drain in progress lives in memory: lost on a
// restart, the drain starts its serial part over, which only checks again
// pods that are gone already.
func (r *Reconciler) wait(node string) *drain.VolumeWait {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.waits[node]
}

func (r *Reconciler) setWait(node string, w *drain.VolumeWait) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w == nil {
		delete(r.waits, node)
	} else {
		r.waits[node] = w
	}
}

func (r *Reconciler) forgetWait(node string) {
	r.setWait(node, nil)
	r.mu.Lock()
	delete(r.told, node)
	r.mu.Unlock()
}

// tellWaiting records a DrainWaiting event when the drain waits for pods
// to complete (a MachineDrainRule's WaitCompleted, a pod's drain label)
// and the pods differ from the ones last told: an operator sees why the
// pool's node is not drained without an event every pass.
func (r *Reconciler) tellWaiting(node *corev1.Node, want string, res drain.Result) {
	if len(res.WaitCompleted) == 0 {
		return
	}
	key := fmt.Sprint(res.WaitCompleted) // fmt sorts map keys
	r.mu.Lock()
	same := r.told[node.Name] == key
	r.told[node.Name] = key
	r.mu.Unlock()
	if !same {
		r.Recorder.Eventf(node, nil, corev1.EventTypeNormal, ReasonDrainWaiting, "Drain", "Draining for %s: %s", want, res.Summary())
	}
}
