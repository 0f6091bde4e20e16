package machinedeployment

import (
	"context"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/countpatch"
)

// writeStatus is the one write at the end of a sync: the revision annotation
// (metadata) and the status the phases computed into s.d.Status, each only
// if it differs from what was read.
func (r *Reconciler) writeStatus(ctx context.Context, s *scope) error {
	if s.skipStatus {
		return nil
	}
	if s.revision != "" && s.d.Annotations[v1alpha1.RevisionAnnotation] != s.revision {
		rev := s.revision
		if err := r.patchDeploymentMeta(ctx, s, func(d *v1alpha1.MachineDeployment) {
			d.Annotations[v1alpha1.RevisionAnnotation] = rev
		}); err != nil {
			return err
		}
	}
	return r.patchStatus(ctx, s, s.d.Status)
}

// patchDeploymentMeta changes the deployment's metadata with an optimistic
// lock and takes the new metadata (resourceVersion included) into s.d,
// leaving the in-memory status alone.
func (r *Reconciler) patchDeploymentMeta(ctx context.Context, s *scope, change func(*v1alpha1.MachineDeployment)) error {
	base := s.d.DeepCopy()
	base.Status = s.origStatus
	updated := base.DeepCopy()
	if updated.Annotations == nil {
		updated.Annotations = map[string]string{}
	}
	change(updated)
	if err := r.Client.Patch(ctx, updated, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("updating machine deployment %s: %w", s.d.Name, err)
	}
	s.d.ObjectMeta = updated.ObjectMeta
	return nil
}

// patchStatus writes st if it differs from the stored status, with an
// optimistic lock: a status computed from a stale copy is not written.
func (r *Reconciler) patchStatus(ctx context.Context, s *scope, st v1alpha1.MachineDeploymentStatus) error {
	if apiequality.Semantic.DeepEqual(s.origStatus, st) {
		return nil
	}
	base := s.d.DeepCopy()
	base.Status = s.origStatus
	updated := base.DeepCopy()
	updated.Status = st
	// The counts always go in the patch: a count of 0 is stored, and
	// kubectl get shows 0 rather than a blank.
	patch, err := countpatch.Status(base, updated, map[string]int32{
		"replicas": st.Replicas, "updatedReplicas": st.UpdatedReplicas, "readyReplicas": st.ReadyReplicas,
		"availableReplicas": st.AvailableReplicas, "unavailableReplicas": st.UnavailableReplicas,
	})
	if err != nil {
		return err
	}
	if err := r.Client.Status().Patch(ctx, updated, patch); err != nil {
		return fmt.Errorf("updating status of machine deployment %s: %w", s.d.Name, err)
	}
	return nil
}
