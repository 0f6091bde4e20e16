package machine

import (
	"time"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// effectiveCreationTimeout is the machine's annotation
// node.machine.sapcloud.io/effective-creation-timeout (a Go duration), which
// takes precedence over spec.creationTimeout and --machine-creation-timeout,
// as in MCM (machine-controller-manager PR #1104): an adjuster sets it on a
// MachineDeployment, the deployment copies it to its MachineSets and a set
// to the machines it creates. A value that is no positive duration is not
// used, so a typo cannot fail machines at once; it is bad input, so the
// machine gets a Warning event InvalidAnnotation and the log a line saying
// which timeout applies instead.
func (r *Reconciler) effectiveCreationTimeout(s *scope) (time.Duration, bool) {
	raw, ok := s.machine.Annotations[v1alpha1.EffectiveCreationTimeoutAnnotation]
	if !ok {
		return 0, false
	}
	d, err := time.ParseDuration(raw)
	if err != nil || d <= 0 {
		s.log.Info("Ignoring an annotation that is no positive duration", "annotation", v1alpha1.EffectiveCreationTimeoutAnnotation, "value", raw)
		r.warning(s, reasonInvalidAnnotation, actionCreate,
			"annotation %s=%q is no positive duration (such as 30m); the creation timeout from spec.creationTimeout or --machine-creation-timeout applies",
			v1alpha1.EffectiveCreationTimeoutAnnotation, raw)
		return 0, false
	}
	return d, true
}
