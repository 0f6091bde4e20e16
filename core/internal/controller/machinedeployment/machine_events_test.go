package machinedeployment

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

func TestMachineChangesThatMatter(t *testing.T) {
	p := machineChangesThatMatter()
	machine := func(labels map[string]string) *v1alpha1.Machine {
		m := &v1alpha1.Machine{}
		m.Name = "m"
		m.Labels = labels
		return m
	}
	assert.False(t, p.Create(event.CreateEvent{Object: machine(map[string]string{"pool": "a"})}), "new machine without node")
	assert.True(t, p.Create(event.CreateEvent{Object: machine(map[string]string{v1alpha1.NodeLabelKey: "n1"})}), "new machine with node")
	assert.True(t, p.Delete(event.DeleteEvent{Object: machine(nil)}), "deleted machine")

	update := func(o, n *v1alpha1.Machine) bool { return p.Update(event.UpdateEvent{ObjectOld: o, ObjectNew: n}) }
	o := machine(map[string]string{"pool": "a"})
	n := o.DeepCopy()
	n.Status.CurrentStatus.Phase = v1alpha1.MachineRunning
	assert.False(t, update(o, n), "status only")
	n = o.DeepCopy()
	n.Labels["other"] = "x"
	assert.False(t, update(o, n), "a label other than the node's")
	n = o.DeepCopy()
	n.Labels[v1alpha1.NodeLabelKey] = "n1"
	assert.True(t, update(o, n), "node label set")
	n = o.DeepCopy()
	now := metav1.Now()
	n.DeletionTimestamp = &now
	assert.True(t, update(o, n), "deletion requested")
}
