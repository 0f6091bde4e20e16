package machineset

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/internal/freeze"
)

// reconcileDelete deletes the machines of a set that is being deleted and
// removes the finalizer once none is left. Owner references alone are not
// enough: a control plane without a garbage collector would leave the
// machines behind.
func (r *Reconciler) reconcileDelete(ctx context.Context, ms *v1alpha1.MachineSet) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(ms, v1alpha1.MachineFinalizer) {
		return ctrl.Result{}, nil
	}
	if r.Gate.Frozen() {
		ctrl.LoggerFrom(ctx).V(1).Info("API server freeze: not deleting the machines of a deleted set", "reason", r.Gate.Reason())
		return ctrl.Result{RequeueAfter: freeze.Recheck}, nil
	}
	live := &v1alpha1.MachineList{}
	if err := r.APIReader.List(ctx, live, client.InNamespace(ms.Namespace)); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing machines: %w", err)
	}
	remaining := 0
	var toDelete []*v1alpha1.Machine
	for i := range live.Items {
		m := &live.Items[i]
		if ref := metav1.GetControllerOf(m); ref == nil || ref.UID != ms.UID {
			continue
		}
		remaining++
		if m.DeletionTimestamp == nil {
			toDelete = append(toDelete, m)
		}
	}
	// Concurrently, bounded as a scale-down is (executePlan).
	if _, err := slowStartBatch(len(toDelete), r.Options.withDefaults().BurstReplicas, func(i int) error {
		return r.deleteMachine(ctx, ms, toDelete[i])
	}); err != nil {
		return ctrl.Result{}, err
	}
	if remaining > 0 {
		// Machine deletions wake the set up; the requeue is a safety net for
		// machines whose deletion takes long.
		return ctrl.Result{RequeueAfter: time.Minute}, nil
	}
	if err := setup.RemoveFinalizer(ctx, r.Client, ms, v1alpha1.MachineFinalizer); err != nil {
		return ctrl.Result{}, fmt.Errorf("removing finalizer of machine set %s: %w", ms.Name, err)
	}
	return ctrl.Result{}, nil
}
