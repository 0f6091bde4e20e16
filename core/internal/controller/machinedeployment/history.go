package machinedeployment

import (
	"context"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// cleanupHistory deletes the oldest old machine sets beyond
// revisionHistoryLimit. Only empty sets go: no replicas wanted, no machines
// reported, and a status that has seen the latest spec. An unset limit keeps
// every old set (MCM's behaviour).
func (r *Reconciler) cleanupHistory(ctx context.Context, s *scope) error {
	limit := s.d.Spec.RevisionHistoryLimit
	if limit == nil {
		return nil
	}
	for _, ms := range historyToDelete(s.old, *limit) {
		ctrl.LoggerFrom(ctx).Info("Deleting old machine set beyond the revision history limit", "machineSet", ms.Name, "revision", revisionOf(ms))
		if err := r.Client.Delete(ctx, ms, client.Preconditions{UID: &ms.UID}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting old machine set %s: %w", ms.Name, err)
		}
	}
	return nil
}

// historyToDelete picks the old sets to delete so that at most limit remain,
// lowest revision first, skipping any set that is not empty and settled.
func historyToDelete(old []*v1alpha1.MachineSet, limit int32) []*v1alpha1.MachineSet {
	var alive []*v1alpha1.MachineSet
	for _, ms := range old {
		if ms.DeletionTimestamp == nil {
			alive = append(alive, ms)
		}
	}
	excess := len(alive) - int(limit)
	if excess <= 0 {
		return nil
	}
	sort.SliceStable(alive, func(i, j int) bool {
		ri, rj := revisionOf(alive[i]), revisionOf(alive[j])
		if ri != rj {
			return ri < rj
		}
		return olderThan(alive[i], alive[j])
	})
	var out []*v1alpha1.MachineSet
	for _, ms := range alive[:excess] {
		if ms.Spec.Replicas != 0 || ms.Status.Replicas != 0 || ms.Generation > ms.Status.ObservedGeneration {
			continue
		}
		out = append(out, ms)
	}
	return out
}
