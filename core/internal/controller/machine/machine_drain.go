package machine

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	machinaio "github.com/machina-io/machina/core/api/machina/v1alpha1"
	"github.com/machina-io/machina/core/drainorder"
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
// stored volume wait, the detach timeout, the driver's volume mapping and
// the MachineDrainRules that select the machine. The error (the rules
// cannot be read, or one has a selector that does not parse) names the
// rule; the pass is not run then, so no pod a rule meant to keep is
// evicted by mistake.
func (r *Reconciler) drainOptions(ctx context.Context, s *scope, force bool) (drain.Options, error) {
	rules, err := r.drainRules(ctx, s)
	if err != nil {
		return drain.Options{}, err
	}
	return drain.Options{
		Force:         force,
		Wait:          loadVolumeWait(s),
		DetachTimeout: r.Options.PVDetachTimeout,
		// Zero (the option unset) waits for no reattach.
		ReattachTimeout: r.Options.PVReattachTimeout,
		VolumeIDs:       r.volumeIDs(s),
		Now:             s.now,
		Rules:           rules,
	}, nil
}

// drainPass runs one drain pass over the Node with the machine's options
// (drainOptions); noCordon leaves the Node schedulable.
func (r *Reconciler) drainPass(ctx context.Context, s *scope, nodeName string, force, noCordon bool) (drain.Result, error) {
	opts, err := r.drainOptions(ctx, s, force)
	if err != nil {
		return drain.Result{}, err
	}
	opts.NoCordon = noCordon
	return r.Drainer.Pass(ctx, nodeName, opts)
}

// drainRules are the MachineDrainRules of the machine's namespace that
// select it (drainorder.ForMachine). Where the kind is not served (its CRD
// not installed) no rule can exist, and there is none.
func (r *Reconciler) drainRules(ctx context.Context, s *scope) (*drainorder.Rules, error) {
	var list machinaio.MachineDrainRuleList
	if err := r.Control.List(ctx, &list, client.InNamespace(s.machine.Namespace)); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing the MachineDrainRules of namespace %s: %w", s.machine.Namespace, err)
	}
	return drainorder.ForMachine(list.Items, s.machine.Labels)
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
