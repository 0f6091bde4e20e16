package setup

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// BenchmarkPatcherDiff measures what a Patcher computes at the end of every
// reconcile that writes: the patches of a Machine (merge) and of a Node
// (strategic) whose status and one annotation changed.
func BenchmarkPatcherDiff(b *testing.B) {
	for _, tc := range []struct {
		name string
		obj  func() (before, after client.Object)
	}{
		{name: "Machine", obj: func() (client.Object, client.Object) {
			m := benchMachine()
			a := m.DeepCopy()
			changeMachine(a)
			return m, a
		}},
		{name: "Node", obj: func() (client.Object, client.Object) { n := benchNode(); a := n.DeepCopy(); changeNode(a); return n, a }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			before, after := tc.obj()
			var opts []PatchOption
			if tc.name == "Node" {
				opts = append(opts, Strategic())
			}
			p := NewPatcher(nil, before, opts...)
			b.ReportAllocs()
			for b.Loop() {
				o, s, err := p.diff(after)
				if err != nil || o == nil || s == nil {
					b.Fatalf("diff: %v %v %v", o, s, err)
				}
			}
		})
	}
}

func benchMachine() *v1alpha1.Machine {
	m := &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m-1", ResourceVersion: "7", UID: "u-1",
			Labels:      map[string]string{"pool": "a", "node": "n-1"},
			Annotations: map[string]string{"a": "b"},
			Finalizers:  []string{"machine.sapcloud.io/machine-controller-manager"}},
		Spec: v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Kind: "MachineClass", Name: "c"}, ProviderID: "inmemory:///ns/m-1/1"},
	}
	m.Status.CurrentStatus.Phase = v1alpha1.MachineRunning
	m.Status.LastOperation = v1alpha1.LastOperation{Description: "Machine is running", State: v1alpha1.MachineStateSuccessful, Type: v1alpha1.MachineOperationHealthCheck}
	for i := range 6 {
		m.Status.Conditions = append(m.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeConditionType(fmt.Sprintf("C%d", i)), Status: corev1.ConditionFalse, Reason: "Fine", Message: "all fine"})
	}
	return m
}

func changeMachine(m *v1alpha1.Machine) {
	m.Annotations["changed"] = "yes"
	m.Status.CurrentStatus.Phase = v1alpha1.MachineTerminating
	m.Status.LastOperation.Description = "Deleting"
}

func benchNode() *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n-1", ResourceVersion: "9", UID: "u-n1",
			Labels:      map[string]string{"kubernetes.io/hostname": "n-1", "node.machine.sapcloud.io/machine-name": "m-1"},
			Annotations: map[string]string{"a": "b"}},
		Spec: corev1.NodeSpec{ProviderID: "inmemory:///ns/m-1/1", Taints: []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}},
	}
	n.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")}
	n.Status.Allocatable = n.Status.Capacity.DeepCopy()
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}, {Type: corev1.NodeHostName, Address: "n-1"}}
	for _, c := range []corev1.NodeConditionType{corev1.NodeReady, corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure, "NetworkUnavailable"} {
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: c, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficient", Message: "kubelet is fine"})
	}
	return n
}

func changeNode(n *corev1.Node) {
	n.Annotations["changed"] = "yes"
	n.Spec.Unschedulable = true
	n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: "Terminating", Status: corev1.ConditionTrue, Reason: "Deleting"})
}
