package machinedeployment

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/disruption"
	"github.com/machina-io/machina/core/internal/controller/phase"
)

// Events of the machine expiry (expireAfter in the template's machine
// configuration) and of the replacement of drifted machines
// (spec.disruption.replaceDrifted).
const (
	// reasonMachineExpired (Normal): a machine older than expireAfter was
	// deleted; its set replaces it.
	reasonMachineExpired = "MachineExpired"
	// reasonExpiryBlocked (Warning): machines have expired but deleting one
	// would leave more machines unavailable than maxUnavailable allows.
	reasonExpiryBlocked = "ExpiryBlocked"
	// reasonDriftReplaced (Normal): a machine whose VM drifted from its
	// MachineClass was deleted; its set replaces it with a VM of the class.
	reasonDriftReplaced = "DriftReplaced"
	// reasonDriftBlocked (Warning): drifted machines wait, as deleting one
	// would leave more machines unavailable than maxUnavailable allows.
	reasonDriftBlocked = "DriftReplacementBlocked"
)

// replacement is a machine the expire phase may delete, and why.
type replacement struct {
	m *v1alpha1.Machine
	// expired is true for a machine older than expireAfter, false for a
	// drifted one.
	expired bool
}

// expire is the phase after the rollout: once the rollout is complete, it
// deletes one machine of the new set at a time (none while a machine of the
// set is terminating), and only while one more unavailable machine stays
// within maxUnavailable (1 for Recreate, which has no bound); its set
// replaces it. It deletes, oldest first, the machines that have lived
// longer than the template's expireAfter, then, with
// spec.disruption.replaceDrifted, the machines whose VM drifted from their
// class (drifted). A machine whose node asks not to be disrupted (the
// disruption package) waits, and the next one goes in its place.
// A machine's age counts from status.creationObservedTime, the machine
// controller's first sight of it, as the machine timeouts do, and from
// creationTimestamp before that is written. It requeues the deployment for
// the next machine to expire.
func (r *Reconciler) expire(ctx context.Context, s *scope) (phase.Result, error) {
	var expireAfter time.Duration
	if cfg := s.d.Spec.Template.Spec.MachineConfiguration; cfg != nil && cfg.MachineExpireAfter != nil && cfg.MachineExpireAfter.Err() == nil {
		expireAfter = cfg.MachineExpireAfter.Duration
	}
	replaceDrifted := s.d.Spec.Disruption != nil && s.d.Spec.Disruption.ReplaceDrifted
	if expireAfter <= 0 && !replaceDrifted {
		return phase.Result{}, nil
	}
	if s.new == nil || s.oldMachinesLeft() {
		// The rollout replaces machines anyway; expiry waits for it.
		return phase.Result{}, nil
	}

	var (
		expired, driftedOnes []*v1alpha1.Machine
		next                 time.Duration
	)
	for _, m := range s.machines[s.new.UID] {
		if m.DeletionTimestamp != nil {
			continue
		}
		if expireAfter > 0 {
			if left := ageStart(m).Add(expireAfter).Sub(s.now); left <= 0 {
				expired = append(expired, m)
				continue
			} else if next == 0 || left < next {
				next = left
			}
		}
		if replaceDrifted && drifted(m) {
			driftedOnes = append(driftedOnes, m)
		}
	}
	res := phase.Result{RequeueAfter: next}
	if len(expired)+len(driftedOnes) == 0 {
		return res, nil
	}
	// Oldest first; drifted machines by name, after the expired ones.
	slices.SortFunc(expired, func(a, b *v1alpha1.Machine) int {
		if c := ageStart(a).Compare(ageStart(b)); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	slices.SortFunc(driftedOnes, func(a, b *v1alpha1.Machine) int { return strings.Compare(a.Name, b.Name) })
	var candidates []replacement
	for _, m := range expired {
		candidates = append(candidates, replacement{m: m, expired: true})
	}
	for _, m := range driftedOnes {
		candidates = append(candidates, replacement{m: m})
	}
	what := waitingSummary(len(expired), len(driftedOnes), expireAfter)

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
		msg := fmt.Sprintf("%s wait: %d of %d machines are unavailable, %d terminating, and maxUnavailable is %d",
			what, unavailable, s.d.Spec.Replicas, terminating, limit)
		if limit == 0 {
			msg += "; with maxUnavailable 0 no machine is ever replaced this way, set maxUnavailable to 1 or more"
		}
		reason := reasonExpiryBlocked
		if len(expired) == 0 {
			reason = reasonDriftBlocked
		}
		r.Recorder.Eventf(s.d, nil, corev1.EventTypeWarning, reason, "Expire", "%s", msg)
		// The machines' own changes wake the deployment when one becomes
		// available again; the requeue covers a limit that never changes.
		return res.Merge(phase.Result{RequeueAfter: time.Minute}), nil
	}
	// Disruption budgets of reasons Expired and Drifted: one machine at a
	// time goes anyway, so a budget only holds a reason back when it allows
	// none.
	candidates = r.withinBudgets(s, candidates)
	if len(candidates) == 0 {
		return res.Merge(budgetRequeue(s)), nil
	}
	victim, held, err := r.firstDisruptable(ctx, candidates)
	if err != nil {
		return res, err
	}
	if victim == nil {
		r.Recorder.Eventf(s.d, nil, corev1.EventTypeNormal, ReasonDisruptionHeld, "Expire",
			"%s wait: %s", what, strings.Join(held, "; "))
		return res.Merge(phase.Result{RequeueAfter: disruption.Recheck}), nil
	}
	m := victim.m
	if err := r.Client.Delete(ctx, m, client.Preconditions{UID: &m.UID}); err != nil && !apierrors.IsNotFound(err) {
		return res, fmt.Errorf("deleting machine %s to replace it: %w", m.Name, err)
	}
	if victim.expired {
		s.log.Info("Deleted an expired machine", "machine", m.Name, "expireAfter", expireAfter.String())
		r.Recorder.Eventf(s.d, m, corev1.EventTypeNormal, reasonMachineExpired, "Expire", "Deleted machine %s: older than expireAfter %s", m.Name, expireAfter)
	} else {
		s.log.Info("Deleted a drifted machine", "machine", m.Name)
		r.Recorder.Eventf(s.d, m, corev1.EventTypeNormal, reasonDriftReplaced, "Expire",
			"Deleted machine %s: its VM drifted from its MachineClass (the driver needs a new VM); a machine of the class replaces it", m.Name)
	}
	return res, nil
}

// withinBudgets drops the candidates of a reason whose disruption budget
// allows no machine now.
func (r *Reconciler) withinBudgets(s *scope, candidates []replacement) []replacement {
	allows := func(reason v1alpha1.DisruptionReason) bool {
		room, limited := r.room(s, reason, 0)
		return !limited || room > 0
	}
	expiredOK, driftedOK := allows(v1alpha1.DisruptionReasonExpired), allows(v1alpha1.DisruptionReasonDrifted)
	var out []replacement
	for _, c := range candidates {
		if (c.expired && expiredOK) || (!c.expired && driftedOK) {
			out = append(out, c)
		}
	}
	return out
}

// budgetRequeue looks at the deployment again when a budget's window
// changes, if a budget held something back.
func budgetRequeue(s *scope) phase.Result {
	if s.budgetHeld == "" || s.budgetRecheck.IsZero() {
		return phase.Result{}
	}
	return phase.Result{RequeueAfter: max(s.budgetRecheck.Sub(s.now), time.Second)}
}

// drifted reports whether m's VM drifted from its MachineClass: the class
// changed and the driver answered that it needs a new VM for it (the class
// update controller's ClassUpdated=False, reason NeedsNewVM).
func drifted(m *v1alpha1.Machine) bool {
	c := meta.FindStatusCondition(m.Status.MachineConditions, v1alpha1.MachineConditionClassUpdated)
	return c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.ClassUpdateReasonNeedsNewVM
}

// waitingSummary names the machines the phase has to replace.
func waitingSummary(expired, drifted int, expireAfter time.Duration) string {
	var parts []string
	if expired > 0 {
		parts = append(parts, fmt.Sprintf("%d machine(s) older than expireAfter %s", expired, expireAfter))
	}
	if drifted > 0 {
		parts = append(parts, fmt.Sprintf("%d drifted machine(s)", drifted))
	}
	return strings.Join(parts, " and ")
}

// firstDisruptable is the first of candidates whose node does not ask not
// to be disrupted (a machine without a node holds nothing), and why each one
// before it waits.
func (r *Reconciler) firstDisruptable(ctx context.Context, candidates []replacement) (*replacement, []string, error) {
	picked, held, err := disruption.Pick(candidates, func(c replacement) (string, error) {
		if r.Target == nil {
			return "", nil
		}
		return disruption.MachineHold(ctx, r.Target, r.Pods, c.m)
	}, 1)
	if err != nil || len(picked) == 0 {
		return nil, held, err
	}
	return &picked[0], held, nil
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
