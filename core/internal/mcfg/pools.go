package mcfg

import (
	"context"
	"fmt"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
	"github.com/machina-io/machina/core/api/v1alpha1"
)

// SelectingAll starts the reason a pool whose nodeSelector is empty
// chooses no Node: it would select every Node.
const SelectingAll = "SelectingAll"

// DrivenNodes returns the Nodes among nodes that pool p drives: those it
// chooses (chosenNodes) whose primary pool (PrimaryPool, among all of
// pools that choose them) it is. conflicts are the Nodes p chooses that no
// pool may drive, with the other pools choosing them; why says why p
// chooses no nodes at all (an unusable spec). Only an error reading the
// API is an error.
func DrivenNodes(ctx context.Context, control client.Client, pools []mcv1.MachineConfigPool, p *mcv1.MachineConfigPool, nodes []corev1.Node) (driven []string, conflicts map[string][]string, why string, err error) {
	chosenBy := map[string][]string{} // node → pools
	var own []string
	for i := range pools {
		q := &pools[i]
		if !q.DeletionTimestamp.IsZero() || q.Name == p.Name {
			continue
		}
		names, _, err := chosenNodes(ctx, control, q, nodes)
		if err != nil {
			return nil, nil, "", err
		}
		for _, n := range names {
			chosenBy[n] = append(chosenBy[n], q.Name)
		}
	}
	own, why, err = chosenNodes(ctx, control, p, nodes)
	if err != nil {
		return nil, nil, "", err
	}
	conflicts = map[string][]string{}
	for _, name := range own {
		others := chosenBy[name]
		primary, ok := PrimaryPool(append([]string{p.Name}, others...))
		switch {
		case !ok:
			others = slices.Clone(others)
			sort.Strings(others)
			conflicts[name] = others
		case primary == p.Name:
			driven = append(driven, name)
		}
	}
	return driven, conflicts, why, nil
}

// PrimaryPool is the pool, among the pools that choose one Node, that
// drives it, by MCO's rule (pkg/helpers GetPoolsForNode): the master pool
// beats every other; else a custom pool (any name but master and worker)
// beats worker; two custom pools are an error (ok false), as MCO refuses
// them, whatever else chooses the Node.
func PrimaryPool(pools []string) (primary string, ok bool) {
	var master, worker bool
	var custom []string
	for _, p := range pools {
		switch p {
		case mcv1.MasterRole:
			master = true
		case mcv1.WorkerRole:
			worker = true
		default:
			custom = append(custom, p)
		}
	}
	switch {
	case len(custom) > 1:
		return "", false
	case master:
		return mcv1.MasterRole, true
	case len(custom) == 1:
		return custom[0], true
	case worker:
		return mcv1.WorkerRole, true
	}
	return "", false
}

// chosenNodes returns the names of the Nodes among nodes that pool p
// chooses (by spec.nodeSelector, or the machines of its
// spec.machineOwnerRef, read through control, which may be nil without
// machine objects), or why it chooses none (an unusable spec). Only an
// error reading the API is an error. A Node another pool chooses too is
// among them; DrivenNodes says which pool drives it.
func chosenNodes(ctx context.Context, control client.Client, p *mcv1.MachineConfigPool, nodes []corev1.Node) ([]string, string, error) {
	if ref := machineRefOf(p); ref != nil {
		return chooseByMachines(ctx, control, ref, nodes)
	}
	sel := p.Spec.NodeSelector
	if sel == nil {
		return nil, "", nil
	}
	if len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0 {
		return nil, fmt.Sprintf("%s: the nodeSelector is empty and would select every node; it selects none", SelectingAll), nil
	}
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil, fmt.Sprintf("the nodeSelector is invalid: %v", err), nil
	}
	var out []string
	for i := range nodes {
		if selector.Matches(labels.Set(nodes[i].Labels)) {
			out = append(out, nodes[i].Name)
		}
	}
	return out, "", nil
}

// machineRef is the MachineSet or MachineDeployment a pool names instead
// of a nodeSelector (machina's extension).
type machineRef struct {
	kind, namespace, name string
}

func (m machineRef) String() string { return fmt.Sprintf("%s %s/%s", m.kind, m.namespace, m.name) }

// chooseByMachines returns the Nodes of the Machines of a MachineSet or
// MachineDeployment: those its selector matches in its namespace.
func chooseByMachines(ctx context.Context, control client.Client, ref *machineRef, nodes []corev1.Node) ([]string, string, error) {
	if control == nil {
		return nil, fmt.Sprintf("the pool names %s, but this manager has no machine objects", ref), nil
	}
	var sel *metav1.LabelSelector
	key := client.ObjectKey{Namespace: ref.namespace, Name: ref.name}
	switch ref.kind {
	case "MachineSet":
		ms := &v1alpha1.MachineSet{}
		if err := control.Get(ctx, key, ms); err != nil {
			why, err := notFoundOr(err, ref)
			return nil, why, err
		}
		sel = ms.Spec.Selector
	case "MachineDeployment":
		md := &v1alpha1.MachineDeployment{}
		if err := control.Get(ctx, key, md); err != nil {
			why, err := notFoundOr(err, ref)
			return nil, why, err
		}
		sel = md.Spec.Selector
	default:
		return nil, fmt.Sprintf("the pool names a %s; only MachineSet and MachineDeployment are supported", ref.kind), nil
	}
	if sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0) {
		return nil, fmt.Sprintf("%s has no selector", ref), nil
	}
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil, fmt.Sprintf("the selector of %s is invalid: %v", ref, err), nil
	}
	machines := &v1alpha1.MachineList{}
	if err := control.List(ctx, machines, client.InNamespace(ref.namespace), client.MatchingLabelsSelector{Selector: selector}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, "", fmt.Errorf("listing the machines of %s: %w", ref, err)
	}
	exists := map[string]bool{}
	for i := range nodes {
		exists[nodes[i].Name] = true
	}
	var out []string
	for i := range machines.Items {
		if n := MachineNode(&machines.Items[i]); n != "" && exists[n] {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out, "", nil
}

func notFoundOr(err error, ref *machineRef) (string, error) {
	if client.IgnoreNotFound(err) == nil {
		return fmt.Sprintf("%s does not exist", ref), nil
	}
	return "", fmt.Errorf("reading %s: %w", ref, err)
}

// MachineNode is the Node of a Machine: its label "node".
func MachineNode(m *v1alpha1.Machine) string {
	return m.Labels[v1alpha1.NodeLabelKey]
}

// machineRefOf is the MachineSet or MachineDeployment the pool names
// (spec.machineOwnerRef), or nil.
func machineRefOf(p *mcv1.MachineConfigPool) *machineRef {
	if r := p.Spec.MachineOwnerRef; r != nil {
		return &machineRef{kind: r.Kind, namespace: r.Namespace, name: r.Name}
	}
	return nil
}
