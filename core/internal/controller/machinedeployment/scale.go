package machinedeployment

import (
	"context"
	"math"
	"sort"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/phase"
)

// machinesOf is the number of machines a set may have right now: its
// replicas, or more while a scale-down has not happened yet (status.replicas
// still counts the machines the set is about to delete). Surge checks count
// this rather than replicas alone, so that new machines are not created
// before the old ones they replace are gone.
func machinesOf(ms *v1alpha1.MachineSet) int32 {
	return max(ms.Spec.Replicas, ms.Status.Replicas)
}

// availableOf is the number of available machines of a set that will still
// be there once the set reaches its replicas: a set scaled down a moment ago
// may still report machines it is about to delete as available.
func availableOf(ms *v1alpha1.MachineSet) int32 {
	return min(ms.Status.AvailableReplicas, ms.Spec.Replicas)
}

func sumReplicas(sets []*v1alpha1.MachineSet) (n int32) {
	for _, ms := range sets {
		if ms != nil {
			n += ms.Spec.Replicas
		}
	}
	return n
}

func sumMachines(sets []*v1alpha1.MachineSet) (n int32) {
	for _, ms := range sets {
		if ms != nil {
			n += machinesOf(ms)
		}
	}
	return n
}

// newMachineSetReplicas is the size the new machine set may grow to now.
// A strategy with bounds (RollingUpdate): up to replicas+maxSurge machines in
// all sets together, never more than replicas in the new set. Without bounds
// (Recreate): replicas (the old sets are already empty when it is called).
func newMachineSetReplicas(d *v1alpha1.MachineDeployment, all []*v1alpha1.MachineSet, newMS *v1alpha1.MachineSet) int32 {
	if !bounded(d) {
		return d.Spec.Replicas
	}
	return newSetTarget(d.Spec.Replicas, maxSurge(d), sumMachines(all), newMS.Spec.Replicas)
}

// newSetTarget is newMachineSetReplicas in counts: a new set of newReplicas
// grows by what replicas+surge leaves above the machines of all sets, up to
// replicas.
func newSetTarget(replicas, surge, machines, newReplicas int32) int32 {
	maxTotal := replicas + surge
	if machines >= maxTotal {
		return newReplicas
	}
	grow := min(maxTotal-machines, replicas-newReplicas)
	return newReplicas + max(grow, 0)
}

// isScalingEvent reports whether the deployment's replicas changed since its
// active machine sets were last scaled (their desired-replicas annotation).
// A scaling event is handled by proportional scaling, not as a rollout step.
func isScalingEvent(d *v1alpha1.MachineDeployment, sets []*v1alpha1.MachineSet) bool {
	for _, ms := range active(sets) {
		if desired, ok := annotationInt(ms, v1alpha1.DesiredReplicasAnnotation); ok && desired != d.Spec.Replicas {
			return true
		}
	}
	return false
}

// proportionalSizes spreads a change of the deployment's replicas over its
// active machine sets (proportionalSizesOf); the sets' counts are taken as a
// snapshot.
func proportionalSizes(d *v1alpha1.MachineDeployment, sets []*v1alpha1.MachineSet) map[string]int32 {
	var snaps []setSnapshot
	for _, ms := range sets {
		if ms != nil {
			snaps = append(snaps, setCounts(ms))
		}
	}
	return proportionalSizesOf(d.Spec.Replicas, maxSurge(d), d.Status.Replicas, snaps)
}

// proportionalSizesOf spreads a change of the deployment's replicas over its
// active machine sets in proportion to their sizes, so that a scaling event
// during a rollout neither speeds it up nor hides a bad template. The total
// moves to replicas+surge (0 when scaling to zero). Each set's share is
// size*newMax/oldMax rounded, with oldMax from the set's max-replicas
// annotation (observed, the deployment's status.replicas, without it); what
// rounding leaves over goes to the first set in the order: largest first,
// and among equal sizes the newest first when growing and the oldest first
// when shrinking.
func proportionalSizesOf(replicas, surge, observed int32, sets []setSnapshot) map[string]int32 {
	var act []setSnapshot
	for _, ms := range sets {
		if ms.Replicas > 0 {
			act = append(act, ms)
		}
	}
	allowed := int32(0)
	if replicas > 0 {
		allowed = replicas + surge
	}
	var current int32
	for _, ms := range act {
		current += ms.Replicas
	}
	toAdd := allowed - current
	sort.SliceStable(act, func(i, j int) bool {
		a, b := act[i], act[j]
		if a.Replicas != b.Replicas {
			return a.Replicas > b.Replicas
		}
		if toAdd > 0 {
			return b.olderThan(a)
		}
		return a.olderThan(b)
	})

	sizes := make(map[string]int32, len(act))
	added := int32(0)
	for _, ms := range act {
		p := int32(0)
		if toAdd != 0 {
			p = proportion(replicas, surge, observed, ms, toAdd, added)
		}
		sizes[ms.Name] = ms.Replicas + p
		added += p
	}
	if len(act) > 0 && toAdd != 0 {
		first := act[0].Name
		sizes[first] = int32(max(int64(sizes[first])+int64(toAdd)-int64(added), 0))
	}
	return sizes
}

// proportion is one set's share of toAdd, bounded so that the shares never
// exceed what is left to add (or remove), and of toAdd's sign: a stale or
// edited max-replicas annotation must not grow a set while the deployment
// shrinks, or shrink one while it grows (found by FuzzRolloutArithmetic;
// Kubernetes' getProportion has no such bound).
func proportion(replicas, surge, observed int32, ms setSnapshot, toAdd, added int32) int32 {
	if ms.Replicas == 0 || toAdd == 0 || toAdd == added {
		return 0
	}
	frac := fraction(replicas, surge, observed, ms)
	left := toAdd - added
	if toAdd > 0 {
		return min(max(frac, 0), left)
	}
	return max(min(frac, 0), left)
}

// fraction is how much a set should grow (or shrink, negative) for the
// deployment's new size.
func fraction(replicas, surge, observed int32, ms setSnapshot) int32 {
	if replicas == 0 {
		return -ms.Replicas
	}
	newMax := replicas + surge
	oldMax := int32(0)
	if ms.MaxReplicas != nil {
		oldMax = *ms.MaxReplicas
	}
	if oldMax == 0 {
		// Without the annotation, the deployment's last observed size is the
		// best guess; the bounds in proportion keep the result in range.
		oldMax = observed
		if oldMax == 0 {
			return 0
		}
	}
	// A stale or hand-edited annotation can make the size anything; the
	// share is bounded by what is left to add (proportion), so the size only
	// has to stay a machine count: converting a float beyond int32 would
	// wrap it (found by FuzzRolloutArithmetic).
	size := math.Round(float64(ms.Replicas) * float64(newMax) / float64(oldMax))
	return int32(min(max(size, 0), math.MaxInt32)) - ms.Replicas
}

// scale is the phase of a scaling event (isScalingEvent): the deployment's
// replicas changed since its sets were last scaled. The sets are scaled
// (scaleSets) and the counts refreshed without judging progress, and the
// sync ends: a scaling event is not a rollout step.
func (r *Reconciler) scale(ctx context.Context, s *scope) (phase.Result, error) {
	if !isScalingEvent(s.d, s.all()) {
		return phase.Result{}, nil
	}
	return phase.Result{Stop: true}, r.scaleOnly(ctx, s, false)
}

// scaleOnly handles a scaling event or a paused deployment: the sets are
// scaled as planScale plans (plan_scale.go), history is cleaned up when
// paused, and the status counts refreshed without judging progress.
func (r *Reconciler) scaleOnly(ctx context.Context, s *scope, paused bool) error {
	if _, err := r.getNewMachineSet(ctx, s, false); err != nil {
		return err
	}
	err := r.applyPlan(ctx, s, planScale(snapshotOf(s)))
	if err == nil && paused {
		err = r.cleanupHistory(ctx, s)
	}
	s.d.Status = calculateStatus(s.d, s.all(), s.new, s.now)
	return err
}
