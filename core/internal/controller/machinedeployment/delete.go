package machinedeployment

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/setup"
)

// reconcileDelete deletes the machine sets of a deployment being deleted and
// removes the finalizer once they are gone. The sets delete their machines
// the same way, so the deployment goes last. Owner references alone are not
// enough: a control plane without a garbage collector would leave them.
func (r *Reconciler) reconcileDelete(ctx context.Context, d *v1alpha1.MachineDeployment) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(d, v1alpha1.MachineFinalizer) {
		return ctrl.Result{}, nil
	}
	live := &v1alpha1.MachineSetList{}
	if err := r.APIReader.List(ctx, live, client.InNamespace(d.Namespace)); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing machine sets: %w", err)
	}
	remaining := 0
	for i := range live.Items {
		ms := &live.Items[i]
		if ref := metav1.GetControllerOf(ms); ref == nil || ref.UID != d.UID {
			continue
		}
		remaining++
		if ms.DeletionTimestamp != nil {
			continue
		}
		if err := r.Client.Delete(ctx, ms, client.Preconditions{UID: &ms.UID}); err != nil && !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("deleting machine set %s: %w", ms.Name, err)
		}
	}
	if remaining > 0 {
		return ctrl.Result{RequeueAfter: time.Minute}, nil
	}
	if err := setup.RemoveFinalizer(ctx, r.Client, d, v1alpha1.MachineFinalizer); err != nil {
		return ctrl.Result{}, fmt.Errorf("removing finalizer of machine deployment %s: %w", d.Name, err)
	}
	return ctrl.Result{}, nil
}
