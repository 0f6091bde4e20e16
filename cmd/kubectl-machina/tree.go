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
	var allNamespaces, showAll bool
	cmd := &cobra.Command{
		Use:   "tree [MACHINEDEPLOYMENT]",
		Short: "Show MachineDeployments with their MachineSets, Machines and Nodes",
		Long: `tree shows a MachineDeployment (or every one in the namespace, or with -A in
every namespace) as a tree: its conditions, its MachineSets, newest revision
first, their Machines with phase, age and last operation, and each Machine's
Node with its Ready condition. MachineSets without a deployment and Machines
without a set are listed after the deployments.

Machines of a set that look the same (same phase, same last operation type and
state, and their Nodes in the same state) are shown as one line, as clusterctl
describe groups them; --show-all lists each. Messages are printed in full.`,
		Example: `  kubectl machina tree
  kubectl machina tree -A
  kubectl machina tree web -n machina --show-all`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.clients()
			if err != nil {
				return err
			}
			name := ""
			if len(args) == 1 {
				if allNamespaces {
					return fmt.Errorf("a MachineDeployment name cannot be given with --all-namespaces")
				}
				name = args[0]
			}
			if allNamespaces {
				c.namespace = ""
			}
			return runTree(cmd.Context(), c, o.now(), name, showAll, o.streams.Out)
		},
	}
	cmd.Flags().BoolVarP(&allNamespaces, "all-namespaces", "A", false, "show the objects of every namespace")
	cmd.Flags().BoolVar(&showAll, "show-all", false, "list every Machine instead of grouping the ones that look the same")
	return cmd
}

// treeRow is one line of the tree.
type treeRow struct {
	namespace, prefix, name, status, age, lastOp string
}

// runTree prints the tree of c.namespace, or with c.namespace "" of every
// namespace, one after the other, with a NAMESPACE column.
func runTree(ctx context.Context, c *clients, now time.Time, name string, showAll bool, out io.Writer) error {
	in, err := c.inventory(ctx)
	if err != nil {
		return err
	}
	allNamespaces := c.namespace == ""
	var rows []treeRow
	for _, part := range in.byNamespace() {
		t := &treeBuilder{ctx: ctx, c: c, in: part.in, now: now, showAll: showAll}
		if name != "" {
			d := part.in.deploymentNamed(name)
			if d == nil {
				return fmt.Errorf("machinedeployments.machine.sapcloud.io %q not found in namespace %q", name, c.namespace)
			}
			if err := t.deployment(d); err != nil {
				return err
			}
		} else if err := t.all(); err != nil {
			return err
		}
		for _, r := range t.rows {
			r.namespace = part.namespace
			rows = append(rows, r)
		}
	}
	if name != "" && len(rows) == 0 {
		return fmt.Errorf("machinedeployments.machine.sapcloud.io %q not found in namespace %q", name, c.namespace)
	}
	if len(rows) == 0 {
		if allNamespaces {
			fmt.Fprintln(out, "No MachineDeployments, MachineSets or Machines found.")
		} else {
			fmt.Fprintf(out, "No MachineDeployments, MachineSets or Machines found in %s namespace.\n", c.namespace)
		}
		return nil
	}
	w := printers.GetNewTabWriter(out)
	if allNamespaces {
		fmt.Fprint(w, "NAMESPACE\t")
	}
	fmt.Fprintln(w, "NAME\tSTATUS\tAGE\tLAST OPERATION")
	for _, r := range rows {
		if allNamespaces {
			fmt.Fprintf(w, "%s\t", r.namespace)
		}
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
	ctx     context.Context
	c       *clients
	in      *inventory
	now     time.Time
	showAll bool
	rows    []treeRow
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
			groups, err := t.groups([]*v1alpha1.Machine{m})
			if err != nil {
				return err
			}
			t.machine(groups[0][0], "", "")
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
	// The conditions first, as clusterctl describe shows them: the reason
	// in the status, the message in full.
	for i, c := range d.Status.Conditions {
		branch, _ := branches(i == len(d.Status.Conditions)-1 && len(sets) == 0)
		status := string(c.Status)
		if c.Reason != "" {
			status += ", " + c.Reason
		}
		ago := "-"
		if !c.LastTransitionTime.IsZero() {
			ago = age(t.now, c.LastTransitionTime.Time)
		}
		t.rows = append(t.rows, treeRow{prefix: branch, name: "Condition/" + string(c.Type), status: status, age: ago, lastOp: orDash(oneLine(c.Message))})
	}
	for i, ms := range sets {
		branch, indent := branches(i == len(sets)-1)
		if err := t.set(ms, branch, indent); err != nil {
			return err
		}
	}
	return nil
}

// set adds the set's row after prefix and its machines below, indented by
// indent; machines that look the same are one row unless showAll.
func (t *treeBuilder) set(ms *v1alpha1.MachineSet, prefix, indent string) error {
	t.rows = append(t.rows, treeRow{
		prefix: prefix,
		name:   "MachineSet/" + ms.Name,
		status: setStatus(ms),
		age:    age(t.now, ms.CreationTimestamp.Time),
		lastOp: lastOperation(ms.Status.LastOperation, 0),
	})
	groups, err := t.groups(t.in.machinesOf(ms))
	if err != nil {
		return err
	}
	for i, g := range groups {
		branch, sub := branches(i == len(groups)-1)
		if len(g) == 1 {
			t.machine(g[0], indent+branch, indent+sub)
			continue
		}
		t.group(g, indent+branch)
	}
	return nil
}

// machineRow is a machine with its node, read once.
type machineRow struct {
	m        *v1alpha1.Machine
	node     *corev1.Node
	nodeName string
}

// key is what machines of one group share: the phase (with the deletion
// step), the last operation's type and state, and the node's state.
func (r machineRow) key() string {
	node := "none"
	switch {
	case r.node != nil:
		node = nodeStatus(r.node)
	case r.nodeName != "":
		node = "not registered"
	}
	op := r.m.Status.LastOperation
	return strings.Join([]string{machineStatus(r.m), string(op.Type), string(op.State), node}, "|")
}

// groups reads the machines' nodes and groups the machines that look the
// same, in the order of their first member; with showAll every machine is
// a group of its own.
func (t *treeBuilder) groups(machines []*v1alpha1.Machine) ([][]machineRow, error) {
	var out [][]machineRow
	at := map[string]int{}
	for _, m := range machines {
		r := machineRow{m: m, nodeName: nodeName(m)}
		if r.nodeName != "" {
			n, err := t.c.node(t.ctx, r.nodeName)
			if err != nil {
				return nil, err
			}
			r.node = n
		}
		if i, ok := at[r.key()]; ok && !t.showAll {
			out[i] = append(out[i], r)
			continue
		}
		at[r.key()] = len(out)
		out = append(out, []machineRow{r})
	}
	return out, nil
}

// group adds one row for machines that look the same: how many, their
// common state, the age of the youngest, and their names.
func (t *treeBuilder) group(g []machineRow, prefix string) {
	newest := g[0].m.CreationTimestamp.Time
	var names []string
	for _, r := range g {
		if r.m.CreationTimestamp.After(newest) {
			newest = r.m.CreationTimestamp.Time
		}
		names = append(names, r.m.Name)
	}
	status := machineStatus(g[0].m)
	switch {
	case g[0].node != nil:
		status += ", Nodes " + nodeStatus(g[0].node)
	case g[0].nodeName != "":
		status += ", Nodes not registered"
	}
	op := g[0].m.Status.LastOperation
	last := strings.TrimSpace(fmt.Sprintf("%s %s", op.Type, op.State))
	if last != "" {
		last += "; "
	}
	t.rows = append(t.rows, treeRow{
		prefix: prefix,
		name:   fmt.Sprintf("%d Machines...", len(g)),
		status: status,
		age:    age(t.now, newest),
		lastOp: last + strings.Join(names, ", ") + " (--show-all lists each)",
	})
}

func (t *treeBuilder) machine(r machineRow, prefix, indent string) {
	m := r.m
	t.rows = append(t.rows, treeRow{
		prefix: prefix,
		name:   "Machine/" + m.Name,
		status: machineStatus(m),
		age:    age(t.now, m.CreationTimestamp.Time),
		lastOp: lastOperation(m.Status.LastOperation, 0),
	})
	if r.nodeName == "" {
		return
	}
	row := treeRow{prefix: indent + "└─", name: "Node/" + r.nodeName, status: "not registered", age: "-", lastOp: "-"}
	if r.node != nil {
		row.status = nodeStatus(r.node)
		row.age = age(t.now, r.node.CreationTimestamp.Time)
	}
	t.rows = append(t.rows, row)
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
