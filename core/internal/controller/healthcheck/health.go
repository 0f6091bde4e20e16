package healthcheck

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	machinaio "github.com/machina-io/machina/core/api/machina/v1alpha1"
	"github.com/machina-io/machina/core/api/v1alpha1"
)

// verdict is what the check found for one machine.
type verdict struct {
	machine *v1alpha1.Machine
	// healthy counts the machine in status.currentHealthy: it has a Node,
	// and no unhealthy condition of it has outlasted its timeout.
	healthy bool
	// unhealthy, when set, says why the machine needs remediation.
	unhealthy string
	// recheck, when positive, is when a pending timeout of the machine
	// expires.
	recheck time.Duration
}

// skipped tells whether a machine opted out of every check.
func skipped(m *v1alpha1.Machine) bool {
	_, a := m.Annotations[machinaio.SkipRemediationAnnotation]
	_, b := m.Annotations[machinaio.ClusterAPISkipRemediationAnnotation]
	return a || b
}

// remediationAsked returns the remediate-machine annotation a machine
// carries, or "".
func remediationAsked(m *v1alpha1.Machine) string {
	for _, key := range []string{machinaio.RemediateMachineAnnotation, machinaio.ClusterAPIRemediateMachineAnnotation} {
		if _, ok := m.Annotations[key]; ok {
			return key
		}
	}
	return ""
}

// inPlace tells whether an in-place update owns the machine's Node for
// now: it may reboot, and the health timeout does not apply either.
func inPlace(phase v1alpha1.MachinePhase) bool {
	switch phase {
	case v1alpha1.MachineInPlaceUpdating, v1alpha1.MachineInPlaceUpdateSuccessful, v1alpha1.MachineInPlaceUpdateFailed:
		return true
	}
	return false
}

// hadNode tells whether a machine in this phase has had its Node: a Node
// that is missing now is gone, not late.
func hadNode(phase v1alpha1.MachinePhase) bool {
	switch phase {
	case v1alpha1.MachineRunning, v1alpha1.MachineUnknown:
		return true
	}
	return false
}

// evaluate judges machine m with its Node node (nil when it names none or
// the Node does not exist) at now.
func evaluate(spec *machinaio.MachineHealthCheckSpec, m *v1alpha1.Machine, node *corev1.Node, now time.Time) verdict {
	v := verdict{machine: m}
	switch {
	case !m.DeletionTimestamp.IsZero():
		// Being deleted: neither healthy nor to remediate again.
		return v
	case remediationAsked(m) != "":
		v.unhealthy = fmt.Sprintf("the machine has the annotation %s", remediationAsked(m))
		return v
	case inPlace(m.Status.CurrentStatus.Phase):
		// The in-place rollout judges it (and replaces it if it fails).
		v.healthy = true
		return v
	}
	nodeName := m.Labels[v1alpha1.NodeLabelKey]
	if node == nil {
		if nodeName != "" && hadNode(m.Status.CurrentStatus.Phase) {
			v.unhealthy = fmt.Sprintf("its node %s is gone", nodeName)
			return v
		}
		return startup(spec, v, now)
	}
	for _, c := range spec.UnhealthyNodeConditions {
		nc := nodeCondition(node, corev1.NodeConditionType(c.Type))
		if nc == nil || string(nc.Status) != string(c.Status) {
			continue
		}
		expiry := nc.LastTransitionTime.Add(c.Timeout.Duration)
		if !now.Before(expiry) {
			v.unhealthy = fmt.Sprintf("node %s has condition %s=%s for more than %s (since %s)",
				node.Name, c.Type, c.Status, c.Timeout.Duration, nc.LastTransitionTime.UTC().Format(time.RFC3339))
			return v
		}
		v.recheck = earliest(v.recheck, expiry.Sub(now))
	}
	v.healthy = true
	return v
}

// startup judges a machine without a Node: unhealthy once
// nodeStartupTimeout has passed since its creation (never with 0), not
// healthy before.
func startup(spec *machinaio.MachineHealthCheckSpec, v verdict, now time.Time) verdict {
	timeout := startupTimeout(spec)
	if timeout == 0 {
		return v
	}
	expiry := v.machine.CreationTimestamp.Add(timeout)
	if !now.Before(expiry) {
		v.unhealthy = fmt.Sprintf("it has no node %s after its creation (nodeStartupTimeout)", timeout)
		return v
	}
	v.recheck = expiry.Sub(now)
	return v
}

// startupTimeout is spec.nodeStartupTimeout, 10m when unset (the schema's
// default, for an object the schema did not default).
func startupTimeout(spec *machinaio.MachineHealthCheckSpec) time.Duration {
	if spec.NodeStartupTimeout == nil {
		return 10 * time.Minute
	}
	return spec.NodeStartupTimeout.Duration
}

func nodeCondition(node *corev1.Node, t corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == t {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}

// earliest returns the earlier of two positive durations, ignoring zeros.
func earliest(a, b time.Duration) time.Duration {
	if a <= 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

// ownedByMachineSet tells whether a MachineSet controls m: only then does
// deleting m replace it.
func ownedByMachineSet(m *v1alpha1.Machine) bool {
	ref := metav1.GetControllerOf(m)
	return ref != nil && ref.Kind == "MachineSet" && ref.APIVersion == v1alpha1.GroupVersion.String()
}
