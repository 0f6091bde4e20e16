package main

import (
	"context"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// snapshot is what the demo reads from the API server at one moment: the
// objects of its namespace and the cluster's Nodes.
type snapshot struct {
	deployments []v1alpha1.MachineDeployment
	sets        []v1alpha1.MachineSet
	machines    []v1alpha1.Machine
	nodes       map[string]*corev1.Node
}

func takeSnapshot(ctx context.Context, c client.Client) (*snapshot, error) {
	var (
		mds   v1alpha1.MachineDeploymentList
		mss   v1alpha1.MachineSetList
		ms    v1alpha1.MachineList
		nodes corev1.NodeList
	)
	in := client.InNamespace(namespace)
	for _, step := range []func() error{
		func() error { return c.List(ctx, &mds, in) },
		func() error { return c.List(ctx, &mss, in) },
		func() error { return c.List(ctx, &ms, in) },
		func() error { return c.List(ctx, &nodes) },
	} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	s := &snapshot{deployments: mds.Items, sets: mss.Items, machines: ms.Items, nodes: map[string]*corev1.Node{}}
	byName := func(a, b string) int { return strings.Compare(a, b) }
	slices.SortFunc(s.deployments, func(a, b v1alpha1.MachineDeployment) int { return byName(a.Name, b.Name) })
	slices.SortFunc(s.sets, func(a, b v1alpha1.MachineSet) int { return byName(a.Name, b.Name) })
	slices.SortFunc(s.machines, func(a, b v1alpha1.Machine) int { return byName(a.Name, b.Name) })
	for i := range nodes.Items {
		s.nodes[nodes.Items[i].Name] = &nodes.Items[i]
	}
	return s, nil
}

// deployment returns the MachineDeployment of that name, or nil.
func (s *snapshot) deployment(name string) *v1alpha1.MachineDeployment {
	for i := range s.deployments {
		if s.deployments[i].Name == name {
			return &s.deployments[i]
		}
	}
	return nil
}

// nodeOf returns the Node of a machine, or nil while it has none.
func (s *snapshot) nodeOf(m *v1alpha1.Machine) *corev1.Node {
	name := m.Labels[v1alpha1.NodeLabelKey]
	if name == "" {
		return nil
	}
	return s.nodes[name]
}

// nodeReady returns the status of a Node's Ready condition, "" for none.
func nodeReady(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}

// settled tells whether the MachineDeployment name has rolled out to
// exactly the demo's replicas machines of class, all Running on Ready Nodes, with no
// other machine left and the status reporting it so.
func (s *snapshot) settled(name, class string) bool {
	md := s.deployment(name)
	if md == nil || md.Spec.Template.Spec.Class.Name != class || md.Spec.Replicas != replicas {
		return false
	}
	st := md.Status
	if md.Generation != st.ObservedGeneration || st.Replicas != replicas ||
		st.UpdatedReplicas != replicas || st.AvailableReplicas != replicas {
		return false
	}
	if int32(len(s.machines)) != replicas {
		return false
	}
	for i := range s.machines {
		m := &s.machines[i]
		if m.DeletionTimestamp != nil || m.Spec.Class.Name != class || m.Status.CurrentStatus.Phase != v1alpha1.MachineRunning {
			return false
		}
		n := s.nodeOf(m)
		if n == nil || nodeReady(n) != corev1.ConditionTrue {
			return false
		}
	}
	return true
}

// machineNodes counts the Nodes that belong to the demo's machines: the
// virtualnode driver labels its Nodes with their class.
func (s *snapshot) machineNodes() int {
	n := 0
	for _, node := range s.nodes {
		if _, ok := node.Labels[virtualnodeClassLabel]; ok {
			n++
		}
	}
	return n
}

// virtualnodeClassLabel is the label the virtualnode driver puts on every
// Node it registers.
const virtualnodeClassLabel = "virtualnode.machina.io/class"

// heldByBudget reports a rolling update from class from to class to held by
// a disruption budget: a machine of the new class Running, every machine of
// the old one still there and not deleted, and the deployment's
// Progressing condition saying that a budget holds the rollout.
func (s *snapshot) heldByBudget(deployment, from, to string) bool {
	md := s.deployment(deployment)
	if md == nil {
		return false
	}
	said := false
	for _, c := range md.Status.Conditions {
		if c.Type == v1alpha1.MachineDeploymentProgressing && strings.Contains(c.Message, "Disruption budget: Rollout waits") {
			said = true
		}
	}
	running, kept := 0, 0
	for i := range s.machines {
		m := &s.machines[i]
		switch {
		case m.Spec.Class.Name == to && m.Status.CurrentStatus.Phase == v1alpha1.MachineRunning:
			running++
		case m.Spec.Class.Name == from && m.DeletionTimestamp == nil:
			kept++
		}
	}
	return said && running >= 1 && kept == int(md.Spec.Replicas)
}
