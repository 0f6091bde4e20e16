package setup

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// AddFinalizer adds finalizer to obj unless it has it, so that a deleted
// object waits for its controller (a set or deployment first deletes what
// it owns: the cluster may run no garbage collector, and MCM clients expect
// the finalizer; a class or config is released once nothing uses it). The
// patch carries the object's resourceVersion: a finalizer added to an
// object changed meanwhile is refused (a conflict), not merged over the
// finalizers another writer added.
func AddFinalizer(ctx context.Context, c client.Writer, obj client.Object, finalizer string) error {
	if controllerutil.ContainsFinalizer(obj, finalizer) {
		return nil
	}
	orig := obj.DeepCopyObject().(client.Object)
	controllerutil.AddFinalizer(obj, finalizer)
	return c.Patch(ctx, obj, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
}

// RemoveFinalizer removes finalizer from obj, an object being deleted, once
// what holds it is gone; an object already gone counts as done. The patch
// needs no resourceVersion: the API server refuses new finalizers on an
// object being deleted, so it cannot drop another writer's.
func RemoveFinalizer(ctx context.Context, c client.Writer, obj client.Object, finalizer string) error {
	if !controllerutil.ContainsFinalizer(obj, finalizer) {
		return nil
	}
	orig := obj.DeepCopyObject().(client.Object)
	controllerutil.RemoveFinalizer(obj, finalizer)
	return client.IgnoreNotFound(c.Patch(ctx, obj, client.MergeFrom(orig)))
}
