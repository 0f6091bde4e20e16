package classupdate

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/phase"
	"github.com/machina-io/machina/core/internal/controller/setup"
)

// stamp records the class's current hash on machines that have a VM but no
// record of the contents it was made from: machines created before the
// class update controller existed, or adopted. They are taken to match the
// class as it is now. The Machine controller records the hash itself when it
// creates a VM, so a new machine never needs this.
func (r *Reconciler) stamp(ctx context.Context, s *scope) (phase.Result, error) {
	for _, m := range s.machines {
		if m.Spec.ProviderID == "" || m.Annotations[v1alpha1.ClassHashAnnotation] != "" {
			continue
		}
		m = m.DeepCopy() // the cache's object
		p := setup.NewPatcher(r.Client, m)
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations[v1alpha1.ClassHashAnnotation] = s.hash
		if err := p.Patch(ctx, m); client.IgnoreNotFound(err) != nil {
			return phase.Result{}, fmt.Errorf("recording the class hash on machine %s: %w", m.Name, err)
		}
		s.log.V(1).Info("Recorded the class contents of a machine without a record", "machine", m.Name, "classHash", s.hash)
	}
	return phase.Result{}, nil
}
