package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// The reads every verb shares. Ownership is the controller owner reference,
// as the MachineSet and MachineDeployment controllers set it.

func (c *clients) deployment(ctx context.Context, name string) (*v1alpha1.MachineDeployment, error) {
	d := &v1alpha1.MachineDeployment{}
	if err := c.control.Get(ctx, client.ObjectKey{Namespace: c.namespace, Name: name}, d); err != nil {
		return nil, err
	}
	return d, nil
}

func (c *clients) machineSet(ctx context.Context, name string) (*v1alpha1.MachineSet, error) {
	ms := &v1alpha1.MachineSet{}
	if err := c.control.Get(ctx, client.ObjectKey{Namespace: c.namespace, Name: name}, ms); err != nil {
		return nil, err
	}
	return ms, nil
}

func (c *clients) machine(ctx context.Context, name string) (*v1alpha1.Machine, error) {
	m := &v1alpha1.Machine{}
	if err := c.control.Get(ctx, client.ObjectKey{Namespace: c.namespace, Name: name}, m); err != nil {
		return nil, err
	}
	return m, nil
}

// inventory is every MachineDeployment, MachineSet and Machine of the
// namespace, read once.
type inventory struct {
	deployments []*v1alpha1.MachineDeployment
	sets        []*v1alpha1.MachineSet
	machines    []*v1alpha1.Machine
}

func (c *clients) inventory(ctx context.Context) (*inventory, error) {
	in := &inventory{}
	var dl v1alpha1.MachineDeploymentList
	if err := c.control.List(ctx, &dl, client.InNamespace(c.namespace)); err != nil {
		return nil, fmt.Errorf("listing MachineDeployments: %w", err)
	}
	var sl v1alpha1.MachineSetList
	if err := c.control.List(ctx, &sl, client.InNamespace(c.namespace)); err != nil {
		return nil, fmt.Errorf("listing MachineSets: %w", err)
	}
	var ml v1alpha1.MachineList
	if err := c.control.List(ctx, &ml, client.InNamespace(c.namespace)); err != nil {
		return nil, fmt.Errorf("listing Machines: %w", err)
	}
	for i := range dl.Items {
		in.deployments = append(in.deployments, &dl.Items[i])
	}
	for i := range sl.Items {
		in.sets = append(in.sets, &sl.Items[i])
	}
	for i := range ml.Items {
		in.machines = append(in.machines, &ml.Items[i])
	}
	sort.Slice(in.deployments, func(i, j int) bool { return in.deployments[i].Name < in.deployments[j].Name })
	sort.Slice(in.machines, func(i, j int) bool { return in.machines[i].Name < in.machines[j].Name })
	sortByRevision(in.sets)
	return in, nil
}

// setsOf are the MachineSets the deployment controls, newest revision first.
func (in *inventory) setsOf(d *v1alpha1.MachineDeployment) []*v1alpha1.MachineSet {
	var out []*v1alpha1.MachineSet
	for _, ms := range in.sets {
		if controlledBy(ms, d.UID) {
			out = append(out, ms)
		}
	}
	return out
}

// machinesOf are the machines the set controls, by name.
func (in *inventory) machinesOf(ms *v1alpha1.MachineSet) []*v1alpha1.Machine {
	var out []*v1alpha1.Machine
	for _, m := range in.machines {
		if controlledBy(m, ms.UID) {
			out = append(out, m)
		}
	}
	return out
}

func controlledBy(obj metav1.Object, uid types.UID) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.UID == uid
}

// revisionOf is a MachineSet's rollout revision, 0 when it has none.
func revisionOf(ms *v1alpha1.MachineSet) int64 {
	v, err := strconv.ParseInt(ms.Annotations[v1alpha1.RevisionAnnotation], 10, 64)
	if err != nil {
		return 0
	}
	return v
}

// sortByRevision puts the newest revision first, then by name.
func sortByRevision(sets []*v1alpha1.MachineSet) {
	sort.SliceStable(sets, func(i, j int) bool {
		ri, rj := revisionOf(sets[i]), revisionOf(sets[j])
		if ri != rj {
			return ri > rj
		}
		return sets[i].Name < sets[j].Name
	})
}

// node reads a Node of the target cluster; nil when it does not exist.
func (c *clients) node(ctx context.Context, name string) (*corev1.Node, error) {
	if name == "" {
		return nil, nil
	}
	n := &corev1.Node{}
	err := c.target.Get(ctx, client.ObjectKey{Name: name}, n)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading node %s: %w", name, err)
	}
	return n, nil
}

// nodeName is the machine's Node: the "node" label the machine controller sets.
func nodeName(m *v1alpha1.Machine) string { return m.Labels[v1alpha1.NodeLabelKey] }

// nodeReady is the status of the Node's Ready condition.
func nodeReady(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return corev1.ConditionUnknown
}

// namespaceInventory is the part of an inventory in one namespace.
type namespaceInventory struct {
	namespace string
	in        *inventory
}

// byNamespace splits the inventory by namespace, namespaces by name.
func (in *inventory) byNamespace() []namespaceInventory {
	parts := map[string]*inventory{}
	part := func(ns string) *inventory {
		if parts[ns] == nil {
			parts[ns] = &inventory{}
		}
		return parts[ns]
	}
	for _, d := range in.deployments {
		p := part(d.Namespace)
		p.deployments = append(p.deployments, d)
	}
	for _, ms := range in.sets {
		p := part(ms.Namespace)
		p.sets = append(p.sets, ms)
	}
	for _, m := range in.machines {
		p := part(m.Namespace)
		p.machines = append(p.machines, m)
	}
	var out []namespaceInventory
	for ns, p := range parts {
		out = append(out, namespaceInventory{namespace: ns, in: p})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].namespace < out[j].namespace })
	return out
}
