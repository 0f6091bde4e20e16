package machineclass

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// MachinesOfClass returns a mapping from a MachineClass to the Machines that
// refer to it and are not being deleted, for the Machine controller to watch
// classes with:
//
//	Watches(&v1alpha1.MachineClass{}, handler.EnqueueRequestsFromMapFunc(machineclass.MachinesOfClass(mgr.GetClient())))
//
// A class change (provider spec, secrets, node template, the finalizer) so
// reaches every machine of the class, as in MCM; machines being deleted are
// left out because their deletion flow does not depend on the class having
// changed. It lists the class's namespace and filters, so that it needs no
// index of its own and works in any manager.
func MachinesOfClass(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		machines := &v1alpha1.MachineList{}
		if err := c.List(ctx, machines, client.InNamespace(obj.GetNamespace())); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Listing machines of a machine class", "machineClass", obj.GetName())
			return nil
		}
		var out []reconcile.Request
		for i := range machines.Items {
			m := &machines.Items[i]
			if classNameOf(m) != obj.GetName() || !m.DeletionTimestamp.IsZero() {
				continue
			}
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(m)})
		}
		return out
	}
}
