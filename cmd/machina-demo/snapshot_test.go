package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// rolledOut returns a snapshot of a MachineDeployment "demo" fully rolled
// out to n machines of class.
func rolledOut(class string, n int32) *snapshot {
	md := v1alpha1.MachineDeployment{ObjectMeta: metav1.ObjectMeta{Name: "demo", Generation: 2}}
	md.Spec.Replicas = n
	md.Spec.Template.Spec.Class.Name = class
	md.Status = v1alpha1.MachineDeploymentStatus{ObservedGeneration: 2, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n}
	s := &snapshot{deployments: []v1alpha1.MachineDeployment{md}, nodes: map[string]*corev1.Node{}}
	for i := range n {
		name := fmt.Sprintf("demo-%d", i)
		m := v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1alpha1.NodeLabelKey: name}}}
		m.Spec.Class.Name = class
		m.Status.CurrentStatus.Phase = v1alpha1.MachineRunning
		s.machines = append(s.machines, m)
		s.nodes[name] = &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{virtualnodeClassLabel: class}},
			Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
		}
	}
	return s
}

func TestSettled(t *testing.T) {
	assert.True(t, rolledOut("small", 3).settled("demo", "small"))
	assert.False(t, rolledOut("small", 3).settled("demo", "large"), "another class")
	assert.False(t, rolledOut("small", 3).settled("other", "small"), "another deployment")

	for name, spoil := range map[string]func(*snapshot){
		"status not observed": func(s *snapshot) { s.deployments[0].Status.ObservedGeneration = 1 },
		"not all updated":     func(s *snapshot) { s.deployments[0].Status.UpdatedReplicas = 2 },
		"not all available":   func(s *snapshot) { s.deployments[0].Status.AvailableReplicas = 2 },
		"machine pending":     func(s *snapshot) { s.machines[1].Status.CurrentStatus.Phase = v1alpha1.MachinePending },
		"machine deleting": func(s *snapshot) {
			now := metav1.Now()
			s.machines[0].DeletionTimestamp = &now
		},
		"old machine left": func(s *snapshot) {
			old := s.machines[0].DeepCopy()
			old.Name, old.Spec.Class.Name = "old", "previous"
			s.machines = append(s.machines, *old)
		},
		"node missing":   func(s *snapshot) { delete(s.nodes, "demo-2") },
		"node not ready": func(s *snapshot) { s.nodes["demo-0"].Status.Conditions[0].Status = corev1.ConditionFalse },
		"node unlabeled": func(s *snapshot) { s.machines[2].Labels = nil },
	} {
		s := rolledOut("small", 3)
		spoil(s)
		assert.False(t, s.settled("demo", "small"), name)
	}
}

func TestRenderFrame(t *testing.T) {
	s := rolledOut("small", 2)
	s.machines[1].Status.CurrentStatus.Phase = ""
	delete(s.nodes, "demo-1")
	frame := renderFrame(s)
	for _, want := range []string{"MACHINEDEPLOYMENT", "demo ", "MACHINE ", "demo-0", "Running", "Creating", "Nodes in the cluster: 1"} {
		assert.Contains(t, frame, want)
	}
	// Columns line up: every machine row starts its class at one offset.
	var offsets []int
	for _, line := range strings.Split(frame, "\n") {
		if strings.HasPrefix(line, "demo-") {
			offsets = append(offsets, strings.Index(line, "small"))
		}
	}
	assert.Len(t, offsets, 2)
	assert.Equal(t, offsets[0], offsets[1])
	assert.Equal(t, frame, renderFrame(s), "a frame depends only on the snapshot, so unchanged state is not redrawn")
}
