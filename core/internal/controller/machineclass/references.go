package machineclass

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// classRefIndex is the name of the cache index, on Machines, MachineSets and
// MachineDeployments, whose value is the name of the MachineClass the object
// refers to. The name is this package's own, so that another controller
// indexing the same field under its own name does not conflict.
const classRefIndex = "machineclass.machina.io/class-name"

// classRefOf returns the class reference of a Machine, or of the machine
// template of a MachineSet or MachineDeployment; ok is false for other
// objects. The template is what counts for a MachineSet: its machines take
// their class from it (spec.machineClass is kept for MCM only).
func classRefOf(obj client.Object) (v1alpha1.ClassSpec, bool) {
	switch o := obj.(type) {
	case *v1alpha1.Machine:
		return o.Spec.Class, true
	case *v1alpha1.MachineSet:
		return o.Spec.Template.Spec.Class, true
	case *v1alpha1.MachineDeployment:
		return o.Spec.Template.Spec.Class, true
	}
	return v1alpha1.ClassSpec{}, false
}

// classNameOf returns the name of the MachineClass obj refers to, "" when it
// refers to none.
func classNameOf(obj client.Object) string {
	ref, ok := classRefOf(obj)
	if !ok || !ref.RefersToMachineClass() {
		return ""
	}
	return ref.Name
}

// indexClassRef is the index function of classRefIndex.
func indexClassRef(obj client.Object) []string {
	if name := classNameOf(obj); name != "" {
		return []string{name}
	}
	return nil
}

// referrer is one object that refers to a class.
type referrer struct {
	kind string
	name string
}

// referrers lists the Machines, MachineSets and MachineDeployments in the
// class's namespace that refer to it, from the cache.
func referrers(ctx context.Context, c client.Reader, class *v1alpha1.MachineClass) ([]referrer, error) {
	opts := []client.ListOption{
		client.InNamespace(class.Namespace),
		client.MatchingFields{classRefIndex: class.Name},
	}
	var out []referrer

	machines := &v1alpha1.MachineList{}
	if err := c.List(ctx, machines, opts...); err != nil {
		return nil, fmt.Errorf("listing machines of class %s: %w", class.Name, err)
	}
	for i := range machines.Items {
		out = append(out, referrer{kind: "Machine", name: machines.Items[i].Name})
	}

	sets := &v1alpha1.MachineSetList{}
	if err := c.List(ctx, sets, opts...); err != nil {
		return nil, fmt.Errorf("listing machine sets of class %s: %w", class.Name, err)
	}
	for i := range sets.Items {
		out = append(out, referrer{kind: "MachineSet", name: sets.Items[i].Name})
	}

	deployments := &v1alpha1.MachineDeploymentList{}
	if err := c.List(ctx, deployments, opts...); err != nil {
		return nil, fmt.Errorf("listing machine deployments of class %s: %w", class.Name, err)
	}
	for i := range deployments.Items {
		out = append(out, referrer{kind: "MachineDeployment", name: deployments.Items[i].Name})
	}
	return out, nil
}

// maxNamedReferrers bounds how many referrers an event names; a class of a
// thousand machines must not produce a message of a thousand names.
const maxNamedReferrers = 5

// describeReferrers renders referrers for an event, e.g.
// "Machine a, Machine b and 12 more". The order is stable (by kind, then
// name), so that the event recorder can aggregate repeated events.
func describeReferrers(refs []referrer) string {
	sorted := append([]referrer(nil), refs...)
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].kind != sorted[j].kind {
			return sorted[i].kind < sorted[j].kind
		}
		return sorted[i].name < sorted[j].name
	})
	var names []string
	for i, r := range sorted {
		if i == maxNamedReferrers {
			break
		}
		names = append(names, r.kind+" "+r.name)
	}
	s := strings.Join(names, ", ")
	if rest := len(sorted) - len(names); rest > 0 {
		s += fmt.Sprintf(" and %d more", rest)
	}
	return s
}
