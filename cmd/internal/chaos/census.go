package chaos

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// census is what exists for one fleet at one moment, and what is wrong
// with it.
type census struct {
	vms, machines, nodes int
	// leaks are VMs whose machine has no Machine object (or whose Machine
	// names another VM); duplicates are VMs beyond the first for one
	// machine; orphans are Nodes without a Machine.
	leaks, duplicates, orphans int
	// unhealthy are machines not (yet) in the fleet's healthy phase, being
	// deleted, or of the wrong class; missing is how many healthy machines
	// short of the deployment's replicas the fleet is.
	unhealthy, missing int
	// deploymentDone: the deployment's status shows every replica updated
	// and available, for the current generation.
	deploymentDone bool
	// names are the Machines that exist, sorted.
	names []string
	// problems describe each defect, for the report.
	problems []string
}

// converged tells whether the fleet is exactly what its deployment asks
// for, with nothing extra anywhere.
func (c census) converged() bool {
	return c.leaks == 0 && c.duplicates == 0 && c.orphans == 0 && c.unhealthy == 0 && c.missing == 0 && c.deploymentDone
}

func (c census) String() string {
	s := fmt.Sprintf("%d VMs, %d Machines, %d Nodes, %d leaked, %d duplicate, %d orphan Nodes, %d machines not done, %d missing, deployment done %t",
		c.vms, c.machines, c.nodes, c.leaks, c.duplicates, c.orphans, c.unhealthy, c.missing, c.deploymentDone)
	if len(c.problems) > 0 {
		shown := c.problems
		if len(shown) > 10 {
			shown = append(slices.Clone(shown[:10]), fmt.Sprintf("... %d more", len(c.problems)-10))
		}
		s += ": " + strings.Join(shown, "; ")
	}
	return s
}

// count takes a census of the fleet: the VMs its driver lists for both of
// its classes, its Machines, the Nodes of the cluster (only the
// virtualnode fleet registers any), and its deployment's status.
func (f *fleet) count(ctx context.Context, c client.Client) (census, error) {
	var cs census
	var machines v1alpha1.MachineList
	if err := c.List(ctx, &machines, client.InNamespace(f.namespace)); err != nil {
		return cs, err
	}
	byName := map[string]*v1alpha1.Machine{}
	nodeOf := map[string]bool{}
	healthy := 0
	for i := range machines.Items {
		m := &machines.Items[i]
		byName[m.Name] = m
		cs.names = append(cs.names, m.Name)
		if n := m.Labels[v1alpha1.NodeLabelKey]; n != "" {
			nodeOf[n] = true
		}
		phase := m.Status.CurrentStatus.Phase
		switch {
		case m.DeletionTimestamp != nil:
			cs.unhealthy++
			cs.problems = append(cs.problems, "machine "+m.Name+" being deleted ("+string(phase)+")")
		case phase != f.healthy:
			cs.unhealthy++
			cs.problems = append(cs.problems, fmt.Sprintf("machine %s %q", m.Name, phase))
		case m.Spec.Class.Name != f.class:
			cs.unhealthy++
			cs.problems = append(cs.problems, "machine "+m.Name+" of class "+m.Spec.Class.Name)
		default:
			healthy++
		}
	}
	slices.Sort(cs.names)
	cs.machines = len(machines.Items)
	cs.missing = max(0, int(f.replicas)-healthy)
	if cs.missing > 0 {
		cs.problems = append(cs.problems, fmt.Sprintf("%d of %d machines missing", cs.missing, f.replicas))
	}

	vmsOf := map[string]int{}
	for _, class := range f.classes {
		resp, err := f.vms.ListMachines(ctx, &driverv1alpha1.ListMachinesRequest{MachineClass: f.driverClass(class)})
		if err != nil {
			return cs, fmt.Errorf("ListMachines(%s): %w", class, err)
		}
		for _, vm := range resp.GetMachines() {
			cs.vms++
			name := vm.GetMachineName()
			vmsOf[name]++
			m := byName[name]
			switch {
			case m == nil:
				cs.leaks++
				cs.problems = append(cs.problems, "VM "+vm.GetProviderId()+" of machine "+name+" has no Machine")
			case m.Spec.ProviderID != "" && m.Spec.ProviderID != vm.GetProviderId():
				cs.leaks++
				cs.problems = append(cs.problems, "VM "+vm.GetProviderId()+" of machine "+name+" is not the Machine's VM "+m.Spec.ProviderID)
			}
		}
	}
	for name, n := range vmsOf {
		if n > 1 {
			cs.duplicates += n - 1
			cs.problems = append(cs.problems, fmt.Sprintf("machine %s has %d VMs", name, n))
		}
	}

	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return cs, err
	}
	if f.hasNodes {
		cs.nodes = len(nodes.Items)
		for _, n := range nodes.Items {
			if byName[n.Name] == nil && !nodeOf[n.Name] {
				cs.orphans++
				cs.problems = append(cs.problems, "Node "+n.Name+" has no Machine")
			}
		}
	}

	var md v1alpha1.MachineDeployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: f.namespace, Name: deploymentName}, &md); err != nil {
		return cs, err
	}
	st := md.Status
	cs.deploymentDone = st.ObservedGeneration >= md.Generation && st.Replicas == f.replicas &&
		st.UpdatedReplicas == f.replicas && st.AvailableReplicas == f.replicas && st.UnavailableReplicas == 0
	if !cs.deploymentDone {
		cs.problems = append(cs.problems, fmt.Sprintf("deployment generation %d observed %d: replicas %d updated %d available %d unavailable %d",
			md.Generation, st.ObservedGeneration, st.Replicas, st.UpdatedReplicas, st.AvailableReplicas, st.UnavailableReplicas))
	}
	return cs, nil
}
