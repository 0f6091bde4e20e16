package machinedeployment

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/disruption"
	"github.com/machina-io/machina/core/internal/controller/phase"
)

// Events of the machine expiry (expireAfter in the template's machine
// configuration).
const (
	// reasonMachineExpired (Normal): a machine older than expireAfter was
	// deleted; its set replaces it.
	reasonMachineExpired = "MachineExpired"
	// reasonExpiryBlocked (Warning): machines have expired but deleting one
	// would leave more machines unavailable than maxUnavailable allows.
	reasonExpiryBlocked = "ExpiryBlocked"
)

// expire is the phase after the rollout: once the rollout is complete, it
// deletes the oldest machine of the new set that has lived longer than the
// template's expireAfter, one at a time (none while a machine of the set is
// terminating) and only while one more unavailable machine stays within
// maxUnavailable (1 for Recreate, which has no bound); its set replaces it.
// A machine whose node asks not to be disrupted (the disruption package)
// waits, and the next oldest goes in its place.
// A machine's age counts from status.creationObservedTime, the machine
// controller's first sight of it, as the machine timeouts do, and from
// creationTimestamp before that is written. It requeues the deployment for
// the next machine to expire.
func (r *Reconciler) expire(ctx context.Context, s *scope) (phase.Result, error) {
	cfg := s.d.Spec.Template.Spec.MachineConfiguration
	if cfg == nil || cfg.MachineExpireAfter == nil || cfg.MachineExpireAfter.Err() != nil || cfg.MachineExpireAfter.Duration <= 0 {
		return phase.Result{}, nil
	}
	if s.new == nil || s.oldMachinesLeft() {
		// The rollout replaces machines anyway; expiry waits for it.
		return phase.Result{}, nil
	}
	expireAfter := cfg.MachineExpireAfter.Duration

	var (
		expired []*v1alpha1.Machine
		next    time.Duration
	)
	for _, m := range s.machines[s.new.UID] {
		if m.DeletionTimestamp != nil {
			continue
		}
		if left := ageStart(m).Add(expireAfter).Sub(s.now); left > 0 {
			if next == 0 || left < next {
				next = left
			}
			continue
		}
		expired = append(expired, m)
	}
	res := phase.Result{RequeueAfter: next}
	if len(expired) == 0 {
		return res, nil
	}
	expiredNum := len(expired)
	// Oldest first.
	slices.SortFunc(expired, func(a, b *v1alpha1.Machine) int {
		if c := ageStart(a).Compare(ageStart(b)); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})

	limit := int32(1)
	if st, ok := strategyOf(s.d); ok {
		if _, u, bounded, berr := st.bounds(s.d); berr == nil && bounded {
			limit = u
		}
	}
	unavailable, terminating, err := r.unavailableOfNewSet(ctx, s)
	if err != nil {
		return res, err
	}
	if terminating > 0 || unavailable+1 > limit {
		msg := fmt.Sprintf("%d machine(s) older than expireAfter %s wait: %d of %d machines are unavailable, %d terminating, and maxUnavailable is %d",
			expiredNum, expireAfter, unavailable, s.d.Spec.Replicas, terminating, limit)
		if limit == 0 {
			msg += "; with maxUnavailable 0 no machine ever expires, set maxUnavailable to 1 or more"
		}
		r.Recorder.Eventf(s.d, nil, corev1.EventTypeWarning, reasonExpiryBlocked, "Expire", "%s", msg)
		// The machines' own changes wake the deployment when one becomes
		// available again; the requeue covers a limit that never changes.
		return res.Merge(phase.Result{RequeueAfter: time.Minute}), nil
	}
	oldest, held, err := r.firstDisruptable(ctx, expired)
	if err != nil {
		return res, err
	}
	if oldest == nil {
		r.Recorder.Eventf(s.d, nil, corev1.EventTypeNormal, ReasonDisruptionHeld, "Expire",
			"%d machine(s) older than expireAfter %s wait: %s", expiredNum, expireAfter, strings.Join(held, "; "))
		return res.Merge(phase.Result{RequeueAfter: disruption.Recheck}), nil
	}
	if err := r.Client.Delete(ctx, oldest, client.Preconditions{UID: &oldest.UID}); err != nil && !apierrors.IsNotFound(err) {
		return res, fmt.Errorf("deleting expired machine %s: %w", oldest.Name, err)
	}
	s.log.Info("Deleted an expired machine", "machine", oldest.Name, "expireAfter", expireAfter.String())
	r.Recorder.Eventf(s.d, oldest, corev1.EventTypeNormal, reasonMachineExpired, "Expire", "Deleted machine %s: older than expireAfter %s", oldest.Name, expireAfter)
	return res, nil
}

// firstDisruptable is the first of machines whose node does not ask not to
// be disrupted (a machine without a node holds nothing), and why each one
// before it waits.
func (r *Reconciler) firstDisruptable(ctx context.Context, machines []*v1alpha1.Machine) (*v1alpha1.Machine, []string, error) {
	var held []string
	for _, m := range machines {
		name := m.Labels[v1alpha1.NodeLabelKey]
		if r.Target == nil || name == "" {
			return m, held, nil
		}
		node := &corev1.Node{}
		if err := r.Target.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
			if apierrors.IsNotFound(err) {
				return m, held, nil
			}
			return nil, nil, fmt.Errorf("reading node %s of machine %s: %w", name, m.Name, err)
		}
		why, err := disruption.Hold(ctx, r.Pods, node)
		if err != nil {
			return nil, nil, err
		}
		if why == "" {
			return m, held, nil
		}
		held = append(held, "machine "+m.Name+": "+why)
	}
	return nil, held, nil
}

// ageStart is when a machine's age starts: the machine controller's first
// sight of it, or its creation before that is recorded.
func ageStart(m *v1alpha1.Machine) time.Time {
	if t := m.Status.CreationObservedTime; t != nil {
		return t.Time
	}
	return m.CreationTimestamp.Time
}

// unavailableOfNewSet counts the new set's unavailable machines from both
// the set's status and a fresh list of its machines from the API server,
// taking the larger: the cache may not show yet a deletion this controller
// made a moment ago, and a second expiry must not follow it.
func (r *Reconciler) unavailableOfNewSet(ctx context.Context, s *scope) (unavailable, terminating int32, err error) {
	list := &v1alpha1.MachineList{}
	if err := r.APIReader.List(ctx, list, client.InNamespace(s.d.Namespace), client.MatchingLabels(s.new.Spec.Selector.MatchLabels)); err != nil {
		return 0, 0, fmt.Errorf("listing machines of %s: %w", s.new.Name, err)
	}
	var running int32
	for i := range list.Items {
		m := &list.Items[i]
		switch {
		case m.DeletionTimestamp != nil:
			terminating++
		case m.Status.CurrentStatus.Phase == v1alpha1.MachineRunning:
			running++
		}
	}
	replicas := s.d.Spec.Replicas
	unavailable = max(replicas-availableOf(s.new), replicas-running, 0)
	return unavailable, terminating, nil
}
