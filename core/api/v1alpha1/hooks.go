package v1alpha1

import (
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// HookNames returns the names of the lifecycle hooks of one family
// (annotations "<prefix>/<name>", PreDrainDeleteHookAnnotationPrefix or
// PreTerminateDeleteHookAnnotationPrefix), sorted.
func HookNames(annotations map[string]string, prefix string) []string {
	var names []string
	for k := range annotations {
		if name, ok := strings.CutPrefix(k, prefix+"/"); ok && name != "" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// DrainClockStart is when the drain timeout of a machine being deleted
// starts to run: its deletion, as in MCM, or, when pre-drain hooks held it,
// the moment the last one was removed (the transition of the condition
// PreDrainDeleteHookSucceeded to True); time held by a hook is not drain
// time. The deletion is when the controller first saw it
// (status.deletionObservedTime, on its own clock), not the API server's
// deletionTimestamp, so a skew between the clocks does not move the timeout;
// deletionTimestamp only until the controller has recorded that.
func DrainClockStart(m *Machine) time.Time {
	var start time.Time
	switch {
	case m.Status.DeletionObservedTime != nil:
		start = m.Status.DeletionObservedTime.Time
	case m.DeletionTimestamp != nil:
		start = m.DeletionTimestamp.Time
	}
	c := meta.FindStatusCondition(m.Status.MachineConditions, MachineConditionPreDrainDeleteHookSucceeded)
	if c != nil && c.Status == metav1.ConditionTrue && c.LastTransitionTime.After(start) {
		start = c.LastTransitionTime.Time
	}
	return start
}
