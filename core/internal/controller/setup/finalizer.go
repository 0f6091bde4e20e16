package setup

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// AddFinalizer adds MCM's finalizer to obj unless it has it, so that a
// deleted set or deployment first deletes what it owns (the cluster may run
// no garbage collector, and MCM clients expect the finalizer). The patch
// carries the object's resourceVersion: a finalizer added to an object
// changed meanwhile is refused, not merged.
func AddFinalizer(ctx context.Context, c client.Client, obj client.Object) error {
	if controllerutil.ContainsFinalizer(obj, v1alpha1.MachineFinalizer) {
		return nil
	}
	orig := obj.DeepCopyObject().(client.Object)
	controllerutil.AddFinalizer(obj, v1alpha1.MachineFinalizer)
	return c.Patch(ctx, obj, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
}

// RemoveFinalizer removes MCM's finalizer from obj once what it owns is
// gone; an object already gone counts as done.
func RemoveFinalizer(ctx context.Context, c client.Client, obj client.Object) error {
	orig := obj.DeepCopyObject().(client.Object)
	controllerutil.RemoveFinalizer(obj, v1alpha1.MachineFinalizer)
	return client.IgnoreNotFound(c.Patch(ctx, obj, client.MergeFrom(orig)))
}
