package machine

import (
	"encoding/json"
	"fmt"

	"github.com/machina-io/machina/core/internal/drain"
)

// VolumeWaitAnnotation holds, while a drain waits for the volumes of an
// evicted pod to detach, that wait as JSON (drain.VolumeWait: pod, since,
// volumes). It is stored on the Machine so that the wait survives a
// restart and no worker is held while it lasts; the controller removes it
// when the wait ends.
const VolumeWaitAnnotation = "machina.io/drain-volume-wait"

const reasonDetachTimeout = "VolumeDetachTimeout"

// drainOptions are the options of the next drain pass of the machine: the
// stored volume wait, the detach timeout and the driver's volume mapping.
func (r *Reconciler) drainOptions(s *scope, force bool) drain.Options {
	return drain.Options{
		Force:         force,
		Wait:          loadVolumeWait(s),
		DetachTimeout: r.Options.PVDetachTimeout,
		// Zero (the option unset) waits for no reattach.
		ReattachTimeout: r.Options.PVReattachTimeout,
		VolumeIDs:       r.volumeIDs(s),
		Now:             s.now,
	}
}

// loadVolumeWait reads the stored volume wait; nil when there is none or
// it cannot be read (the drain then starts the serial part over, which
// only re-checks pods that are gone already).
func loadVolumeWait(s *scope) *drain.VolumeWait {
	raw := s.machine.Annotations[VolumeWaitAnnotation]
	if raw == "" {
		return nil
	}
	w := &drain.VolumeWait{}
	if err := json.Unmarshal([]byte(raw), w); err != nil || w.Pod == "" {
		s.log.Info("Ignoring a malformed volume wait annotation", "annotation", VolumeWaitAnnotation)
		return nil
	}
	return w
}

// recordVolumeWait stores the wait of a drain pass (removes it when the
// pass waits for nothing) and tells about detach waits that timed out.
func (r *Reconciler) recordVolumeWait(s *scope, nodeName string, res drain.Result) {
	m := s.machine
	prev := loadVolumeWait(s)
	if res.Waiting == nil {
		delete(m.Annotations, VolumeWaitAnnotation)
	} else if raw, err := json.Marshal(res.Waiting); err == nil {
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations[VolumeWaitAnnotation] = string(raw)
	}
	for _, pod := range res.DetachTimedOut {
		// Told once, for the wait that was stored; a pod that is stuck
		// terminating times out again in every later pass.
		if prev == nil || prev.Pod != pod {
			continue
		}
		msg := fmt.Sprintf("The volumes of pod %s did not detach from node %s within %s; draining on", pod, nodeName, r.Options.PVDetachTimeout)
		s.log.Info(msg)
		r.warning(s, reasonDetachTimeout, actionDrain, "%s", msg)
	}
}
