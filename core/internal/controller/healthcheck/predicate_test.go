package healthcheck

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// TestMachineJudged: a Machine update wakes the checks only when it can
// change their verdict.
func TestMachineJudged(t *testing.T) {
	base := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m", Labels: map[string]string{"pool": "a"}}}
	base.Status.CurrentStatus.Phase = v1alpha1.MachineRunning
	p := machineJudged()
	for name, tc := range map[string]struct {
		change func(*v1alpha1.Machine)
		want   bool
	}{
		"lastOperation only": {func(m *v1alpha1.Machine) { m.Status.LastOperation.Description = "x" }, false},
		"addresses only":     {func(m *v1alpha1.Machine) { m.Status.Addresses = []corev1.NodeAddress{{Address: "10.0.0.1"}} }, false},
		"phase":              {func(m *v1alpha1.Machine) { m.Status.CurrentStatus.Phase = v1alpha1.MachineUnknown }, true},
		"labels":             {func(m *v1alpha1.Machine) { m.Labels["node"] = "n1" }, true},
		"annotation":         {func(m *v1alpha1.Machine) { m.Annotations = map[string]string{"machina.io/skip-remediation": ""} }, true},
		"deletion":           {func(m *v1alpha1.Machine) { m.DeletionTimestamp = &metav1.Time{} }, true},
		"owner": {func(m *v1alpha1.Machine) {
			m.OwnerReferences = []metav1.OwnerReference{{Kind: "MachineSet", Name: "s", UID: "u"}}
		}, true},
	} {
		n := base.DeepCopy()
		tc.change(n)
		assert.Equal(t, tc.want, p.Update(event.UpdateEvent{ObjectOld: base, ObjectNew: n}), name)
	}
}
