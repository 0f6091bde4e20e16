package machinedeployment

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// AnnotationRolloutAfter is written on a machine set created for a passed
// spec.rolloutAfter (docs/machinedeployments.md, "Restarting a rollout"):
// the time, in RFC 3339. The set is then current for that time even if the
// API server's clock stamped its creation a little earlier than the
// controller's clock saw the time pass.
const AnnotationRolloutAfter = "machina.io/rollout-after"

// passedRolloutAfter returns the deployment's spec.rolloutAfter once it has
// passed at now, nil before it and without one.
func passedRolloutAfter(d *v1alpha1.MachineDeployment, now time.Time) *metav1.Time {
	ra := d.Spec.RolloutAfter
	if ra == nil || now.Before(ra.Time) {
		return nil
	}
	return ra
}

// untilRolloutAfter is how long until a future spec.rolloutAfter passes; 0
// when there is none or it has passed. The sync is requeued for that moment,
// since nothing else would wake the deployment then.
func untilRolloutAfter(d *v1alpha1.MachineDeployment, now time.Time) time.Duration {
	ra := d.Spec.RolloutAfter
	if ra == nil || !now.Before(ra.Time) {
		return 0
	}
	// One second more: metav1.Time has a precision of a second, and a sync
	// a moment early would only requeue again.
	return ra.Sub(now) + time.Second
}

// isCurrentSet reports whether a machine set is the deployment's current one:
// its template is the deployment's as far as rollouts go and, once
// spec.rolloutAfter has passed, it was created for it or at or after it
// (Cluster API's rule). A set of the same template from before a passed
// rolloutAfter is old, so its machines are rolled over.
func isCurrentSet(d *v1alpha1.MachineDeployment, ms *v1alpha1.MachineSet, now time.Time) bool {
	if !sameRollingTemplate(&ms.Spec.Template, &d.Spec.Template) {
		return false
	}
	ra := passedRolloutAfter(d, now)
	if ra == nil || !ms.CreationTimestamp.Before(ra) {
		return true
	}
	return ms.Annotations[AnnotationRolloutAfter] == ra.UTC().Format(time.RFC3339)
}
