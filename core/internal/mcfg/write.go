package mcfg

import (
	"context"
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
)

// WriteOwned creates want, controlled by owner, or writes its spec, labels
// and annotations back over an existing MachineConfig owner controls (a
// user's edit is undone). A MachineConfig of that name that owner does not
// control is left alone: failure names it. action says what was done
// ("created", "updated" or "").
func WriteOwned(ctx context.Context, c client.Client, owner client.Object, want *mcv1.MachineConfig) (action, failure string, err error) {
	existing := &mcv1.MachineConfig{}
	err = c.Get(ctx, client.ObjectKeyFromObject(want), existing)
	if apierrors.IsNotFound(err) {
		if err := controllerutil.SetControllerReference(owner, want, c.Scheme()); err != nil {
			return "", "", err
		}
		if err := c.Create(ctx, want); err != nil {
			return "", "", fmt.Errorf("creating %s: %w", want.Name, err)
		}
		return "created", "", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("reading %s: %w", want.Name, err)
	}
	if ref := metav1.GetControllerOf(existing); ref == nil || ref.UID != owner.GetUID() {
		kind := "object"
		if gvk, err := apiutil.GVKForObject(owner, c.Scheme()); err == nil {
			kind = gvk.Kind
		}
		return "", fmt.Sprintf("MachineConfig %s exists and was not generated from %s %s", want.Name, kind, owner.GetName()), nil
	}
	if equality.Semantic.DeepEqual(existing.Spec, want.Spec) && maps.Equal(existing.Labels, want.Labels) &&
		maps.Equal(existing.Annotations, want.Annotations) {
		return "", "", nil
	}
	patch := client.MergeFromWithOptions(existing.DeepCopy(), client.MergeFromWithOptimisticLock{})
	existing.Spec = want.Spec
	existing.Labels = want.Labels
	existing.Annotations = want.Annotations
	if err := c.Patch(ctx, existing, patch); err != nil {
		return "", "", fmt.Errorf("updating %s: %w", want.Name, err)
	}
	return "updated", "", nil
}
