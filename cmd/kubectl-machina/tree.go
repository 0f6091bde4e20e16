package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/cli-runtime/pkg/printers"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

func newTreeCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "tree [MACHINEDEPLOYMENT]",
		Short: "Show MachineDeployments with their MachineSets, Machines and Nodes",
		Long: `tree shows a MachineDeployment (or every one in the namespace) as a tree: its
MachineSets, newest revision first, their Machines with phase, age and last
operation, and each Machine's Node with its Ready condition. MachineSets without a
deployment and Machines without a set are listed after the deployments.`,
		Example: `  kubectl machina tree
  kubectl machina tree web -n machina`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.clients()
			if err != nil {
				return err
			}
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			return runTree(cmd.Context(), c, o.now(), name, o.streams.Out)
		},
	}
}

// treeRow is one line of the tree.
type treeRow struct {
	prefix, name, status, age, lastOp string
}

func runTree(ctx context.Context, c *clients, now time.Time, name string, out io.Writer) error {
	in, err := c.inventory(ctx)
	if err != nil {
		return err
	}
	t := &treeBuilder{ctx: ctx, c: c, in: in, now: now}
	if name != "" {
		d := in.deploymentNamed(name)
		if d == nil {
			return fmt.Errorf("machinedeployments.machine.sapcloud.io %q not found in namespace %q", name, c.namespace)
		}
		if err := t.deployment(d); err != nil {
			return err
		}
	} else {
		if err := t.all(); err != nil {
			return err
		}
		if len(t.rows) == 0 {
			fmt.Fprintf(out, "No MachineDeployments, MachineSets or Machines found in %s namespace.\n", c.namespace)
			return nil
		}
	}
	w := printers.GetNewTabWriter(out)
	fmt.Fprintln(w, "NAME\tSTATUS\tAGE\tLAST OPERATION")
	for _, r := range t.rows {
		fmt.Fprintf(w, "%s%s\t%s\t%s\t%s\n", r.prefix, r.name, r.status, r.age, r.lastOp)
	}
	return w.Flush()
}

func (in *inventory) deploymentNamed(name string) *v1alpha1.MachineDeployment {
	for _, d := range in.deployments {
		if d.Name == name {
			return d
		}
	}
	return nil
}

type treeBuilder struct {
	ctx  context.Context
	c    *clients
	in   *inventory
	now  time.Time
	rows []treeRow
}

// all adds every deployment, then the sets no deployment controls, then the
// machines no set controls.
func (t *treeBuilder) all() error {
	owned := map[*v1alpha1.MachineSet]bool{}
	for _, d := range t.in.deployments {
		for _, ms := range t.in.setsOf(d) {
			owned[ms] = true
		}
		if err := t.deployment(d); err != nil {
			return err
		}
	}
	inSet := map[*v1alpha1.Machine]bool{}
	for _, ms := range t.in.sets {
		for _, m := range t.in.machinesOf(ms) {
			inSet[m] = true
		}
		if !owned[ms] {
			if err := t.set(ms, "", ""); err != nil {
				return err
			}
		}
	}
	for _, m := range t.in.machines {
		if !inSet[m] {
			if err := t.machine(m, "", ""); err != nil {
				return err
			}
		}
	}
	return nil
}

func (t *treeBuilder) deployment(d *v1alpha1.MachineDeployment) error {
	t.rows = append(t.rows, treeRow{
		name:   "MachineDeployment/" + d.Name,
		status: deploymentStatus(d),
		age:    age(t.now, d.CreationTimestamp.Time),
		lastOp: "-",
	})
	sets := t.in.setsOf(d)
	for i, ms := range sets {
		branch, indent := branches(i == len(sets)-1)
		if err := t.set(ms, branch, indent); err != nil {
			return err
		}
	}
	return nil
}

// set adds the set's row after prefix and its machines below, indented by
// indent.
func (t *treeBuilder) set(ms *v1alpha1.MachineSet, prefix, indent string) error {
	t.rows = append(t.rows, treeRow{
		prefix: prefix,
		name:   "MachineSet/" + ms.Name,
		status: setStatus(ms),
		age:    age(t.now, ms.CreationTimestamp.Time),
		lastOp: lastOperation(ms.Status.LastOperation, 80),
	})
	machines := t.in.machinesOf(ms)
	for i, m := range machines {
		branch, sub := branches(i == len(machines)-1)
		if err := t.machine(m, indent+branch, indent+sub); err != nil {
			return err
		}
	}
	return nil
}

func (t *treeBuilder) machine(m *v1alpha1.Machine, prefix, indent string) error {
	t.rows = append(t.rows, treeRow{
		prefix: prefix,
		name:   "Machine/" + m.Name,
		status: machineStatus(m),
		age:    age(t.now, m.CreationTimestamp.Time),
		lastOp: lastOperation(m.Status.LastOperation, 80),
	})
	name := nodeName(m)
	if name == "" {
		return nil
	}
	n, err := t.c.node(t.ctx, name)
	if err != nil {
		return err
	}
	row := treeRow{prefix: indent + "└─", name: "Node/" + name, status: "not registered", age: "-", lastOp: "-"}
	if n != nil {
		row.status = nodeStatus(n)
		row.age = age(t.now, n.CreationTimestamp.Time)
	}
	t.rows = append(t.rows, row)
	return nil
}

// branches are the prefix of an item and the indent of its children.
func branches(last bool) (branch, indent string) {
	if last {
		return "└─", "  "
	}
	return "├─", "│ "
}

func deploymentStatus(d *v1alpha1.MachineDeployment) string {
	parts := []string{fmt.Sprintf("%d/%d ready", d.Status.ReadyReplicas, d.Spec.Replicas)}
	if d.Status.UpdatedReplicas < d.Spec.Replicas || d.Status.Replicas > d.Status.UpdatedReplicas {
		parts = append(parts, fmt.Sprintf("%d/%d updated", d.Status.UpdatedReplicas, max(d.Status.Replicas, d.Spec.Replicas)))
	}
	if d.Spec.Paused {
		parts = append(parts, "paused")
	}
	if d.Labels[v1alpha1.FreezeLabel] == v1alpha1.FreezeValue {
		parts = append(parts, "frozen")
	}
	if d.DeletionTimestamp != nil {
		parts = append(parts, "deleting")
	}
	return strings.Join(parts, ", ")
}

func setStatus(ms *v1alpha1.MachineSet) string {
	parts := []string{fmt.Sprintf("%d/%d ready", ms.Status.ReadyReplicas, ms.Spec.Replicas)}
	if r := revisionOf(ms); r > 0 {
		parts = append(parts, fmt.Sprintf("revision %d", r))
	}
	if ms.Labels[v1alpha1.FreezeLabel] == v1alpha1.FreezeValue {
		parts = append(parts, "frozen")
	}
	if ms.DeletionTimestamp != nil {
		parts = append(parts, "deleting")
	}
	return strings.Join(parts, ", ")
}

func machineStatus(m *v1alpha1.Machine) string {
	phase := string(m.Status.CurrentStatus.Phase)
	if phase == "" {
		phase = "Creating"
	}
	if m.DeletionTimestamp != nil && m.Status.DeletionStep != "" {
		phase += " (" + string(m.Status.DeletionStep) + ")"
	}
	return phase
}

func nodeStatus(n *corev1.Node) string {
	s := "NotReady"
	switch nodeReady(n) {
	case corev1.ConditionTrue:
		s = "Ready"
	case corev1.ConditionUnknown:
		s = "Unknown"
	}
	if n.Spec.Unschedulable {
		s += ",SchedulingDisabled"
	}
	return s
}
