package mcfg

import (
	"context"
	"fmt"
	"slices"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	mcfgv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
)

// DeleteOwned deletes the MachineConfigs that owner controls and keep does
// not name: what a KubeletConfig or ContainerRuntimeConfig generated for a
// pool it no longer selects. what names them in the log ("kubelet").
func DeleteOwned(ctx context.Context, c client.Client, owner client.Object, keep []string, what string, log logr.Logger) error {
	list := &mcfgv1.MachineConfigList{}
	if err := c.List(ctx, list); err != nil {
		return fmt.Errorf("listing MachineConfigs: %w", err)
	}
	for i := range list.Items {
		mc := &list.Items[i]
		ref := metav1.GetControllerOf(mc)
		if ref == nil || ref.UID != owner.GetUID() || slices.Contains(keep, mc.Name) {
			continue
		}
		if err := c.Delete(ctx, mc); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting %s: %w", mc.Name, err)
		}
		log.Info("Deleted generated "+what+" MachineConfig", "machineConfig", mc.Name)
	}
	return nil
}

// Release deletes every MachineConfig of a deleted owner, then removes its
// finalizer so that it goes.
func Release(ctx context.Context, c client.Client, owner client.Object, finalizer, what string, log logr.Logger) error {
	if !controllerutil.ContainsFinalizer(owner, finalizer) {
		return nil
	}
	if err := DeleteOwned(ctx, c, owner, nil, what, log); err != nil {
		return err
	}
	patch := client.MergeFromWithOptions(owner.DeepCopyObject().(client.Object), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(owner, finalizer)
	if err := c.Patch(ctx, owner, patch); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("removing the finalizer: %w", err)
	}
	return nil
}
