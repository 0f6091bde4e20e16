package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/disruption"
)

// maxEvents is how many of a machine's latest events "why" shows.
const maxEvents = 10

func newWhyCommand(o *options) *cobra.Command {
	t := &timeoutFlags{}
	mf := &managerFlags{}
	cmd := &cobra.Command{
		Use:   "why MACHINE",
		Short: "Explain a machine's state: last operation, conditions, events and what the manager waits for",
		Long: `why puts on one screen what explains a Machine's state: its phase, owner, Node and
last operation, what the manager is waiting for (derived from the phase, the
deletion step, the last operation, the Node and the timeouts), the Node's and the
machine's conditions, the MachineHealthChecks that select it (whether they
allow remediation now, and the machine's skip-remediation or remediate-machine
annotation), and its latest events.

Deadlines are computed with the manager's timeouts, read from its /configz through
the API server's service proxy (--manager-metrics-service), unless the Machine sets
its own. When /configz cannot be read (no such Service, forbidden, no answer within
2s, or a manager serving it with --metrics-secure, which refuses proxied requests)
the defaults are used and a line says so. Timeout flags given on the command line
(--machine-creation-timeout, ...) always win.`,
		Example: `  kubectl machina why web-5d8f-abcde`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.clients()
			if err != nil {
				return err
			}
			cfg, err := o.config.ToRESTConfig()
			if err != nil {
				return err
			}
			source := resolveTimeouts(cmd.Context(), cmd.Flags(), t, mf, cfg)
			return runWhy(cmd.Context(), c, t, source, o.now(), args[0], o.streams.Out)
		},
	}
	t.addFlags(cmd.Flags())
	mf.addFlags(cmd.Flags())
	return cmd
}

// machineFacts is what "why" reads about one machine.
type machineFacts struct {
	m      *v1alpha1.Machine
	set    *v1alpha1.MachineSet // nil without one
	deploy string               // the owning deployment's name, "" without one
	node   *corev1.Node         // nil when not registered (or no name yet)
	events []corev1.Event
	// hold says why the machine's node may not be disrupted voluntarily
	// (machina.io/do-not-disrupt), "" when nothing holds it.
	hold string
	// budget is what a disruption budget of the machine's deployment holds
	// back now, "" when none does.
	budget string
}

// runWhy prints the explanation; timeoutSource is the line that says where
// t's timeouts come from (resolveTimeouts).
func runWhy(ctx context.Context, c *clients, t *timeoutFlags, timeoutSource string, now time.Time, name string, out io.Writer) error {
	m, err := c.machine(ctx, name)
	if err != nil {
		return err
	}
	f := &machineFacts{m: m}
	if ref := metav1.GetControllerOf(m); ref != nil && ref.Kind == "MachineSet" {
		if ms, err := c.machineSet(ctx, ref.Name); err == nil && ms.UID == ref.UID {
			f.set = ms
			if dref := metav1.GetControllerOf(ms); dref != nil && dref.Kind == "MachineDeployment" {
				f.deploy = dref.Name
			}
		}
	}
	if f.node, err = c.node(ctx, nodeName(m)); err != nil {
		return err
	}
	if f.node != nil && m.DeletionTimestamp == nil {
		// What a user can read decides what is shown: without the right to
		// list pods the line says so rather than fail the command.
		if hold, err := disruption.Hold(ctx, c.target, f.node); err != nil {
			f.hold = "unknown: " + err.Error()
		} else if hold != "" {
			f.hold = hold + ": in-place updates, pool updates and expiry pass this machine over; a remediation or a deletion asked for does not wait"
		}
	}
	if f.deploy != "" && m.DeletionTimestamp == nil {
		// What the deployment's controller last concluded about its budgets
		// (the end of its Progressing message); a deployment that cannot be
		// read says nothing here.
		if md, err := c.deployment(ctx, f.deploy); err == nil {
			f.budget = budgetHold(md)
		}
	}
	if f.events, err = c.eventsOf(ctx, m); err != nil {
		return err
	}
	waits, err := waitingFor(ctx, c, t, f, now)
	if err != nil {
		return err
	}
	checks, err := c.healthChecksOf(ctx, m)
	if err != nil {
		return err
	}

	fmt.Fprintf(out, "Machine %s in namespace %s\n", m.Name, m.Namespace)
	w := printers.GetNewTabWriter(out)
	fmt.Fprintf(w, "  Phase:\t%s\n", phaseLine(m, now))
	fmt.Fprintf(w, "  Owner:\t%s\n", ownerLine(f))
	fmt.Fprintf(w, "  Class:\t%s/%s\n", orDefault(m.Spec.Class.Kind, "MachineClass"), m.Spec.Class.Name)
	fmt.Fprintf(w, "  Provider ID:\t%s\n", orDash(m.Spec.ProviderID))
	fmt.Fprintf(w, "  Node:\t%s\n", nodeLine(f, now))
	fmt.Fprintf(w, "  Last operation:\t%s\n", lastOperationLine(m.Status.LastOperation, now))
	if f.hold != "" {
		fmt.Fprintf(w, "  Do not disrupt:\t%s\n", f.hold)
	}
	if f.budget != "" {
		fmt.Fprintf(w, "  Disruption budget:\t%s (MachineDeployment %s)\n", f.budget, f.deploy)
	}
	if hooks := preUpdateHooks(f); len(hooks) > 0 {
		fmt.Fprintf(w, "  Pre-update hooks:\t%s: an in-place or pool update of this machine waits until they are removed\n", strings.Join(hooks, ", "))
	}
	if m.DeletionTimestamp != nil {
		fmt.Fprintf(w, "  Deleting:\tsince %s ago, step %s\n", age(now, m.DeletionTimestamp.Time), orDash(string(m.Status.DeletionStep)))
	}
	if err := w.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(out, "\nWaiting for:")
	for _, line := range waits {
		fmt.Fprintf(out, "  %s\n", line)
	}
	fmt.Fprintf(out, "  %s\n", timeoutSource)

	if f.node != nil && len(f.node.Status.Conditions) > 0 {
		fmt.Fprintf(out, "\nNode conditions (%s):\n", f.node.Name)
		w := printers.GetNewTabWriter(out)
		fmt.Fprintln(w, "  TYPE\tSTATUS\tREASON\tAGE\tMESSAGE")
		for _, c := range f.node.Status.Conditions {
			fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\n", c.Type, c.Status, orDash(c.Reason), age(now, c.LastTransitionTime.Time), truncate(oneLine(c.Message), 80))
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
	if len(m.Status.MachineConditions) > 0 {
		fmt.Fprintln(out, "\nMachine conditions:")
		w := printers.GetNewTabWriter(out)
		fmt.Fprintln(w, "  TYPE\tSTATUS\tREASON\tAGE\tMESSAGE")
		for _, c := range m.Status.MachineConditions {
			fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\n", c.Type, c.Status, orDash(c.Reason), age(now, c.LastTransitionTime.Time), truncate(oneLine(c.Message), 80))
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}

	if err := printHealthChecks(out, checks, m, now); err != nil {
		return err
	}

	if len(f.events) == 0 {
		fmt.Fprintln(out, "\nEvents: none")
		return nil
	}
	fmt.Fprintf(out, "\nEvents (latest %d, oldest first):\n", len(f.events))
	w = printers.GetNewTabWriter(out)
	fmt.Fprintln(w, "  AGE\tTYPE\tREASON\tMESSAGE")
	for _, e := range f.events {
		count := ""
		if n := eventCount(&e); n > 1 {
			count = fmt.Sprintf(" (x%d)", n)
		}
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s%s\n", age(now, eventTime(&e)), e.Type, e.Reason, truncate(oneLine(e.Message), 100), count)
	}
	return w.Flush()
}

// eventsOf are the machine's latest events, oldest first.
func (c *clients) eventsOf(ctx context.Context, m *v1alpha1.Machine) ([]corev1.Event, error) {
	var l corev1.EventList
	if err := c.control.List(ctx, &l, client.InNamespace(m.Namespace), client.MatchingFields{
		"involvedObject.kind": "Machine",
		"involvedObject.name": m.Name,
	}); err != nil {
		return nil, fmt.Errorf("listing the events of machine %s: %w", m.Name, err)
	}
	var events []corev1.Event
	for _, e := range l.Items {
		if e.InvolvedObject.UID == "" || e.InvolvedObject.UID == m.UID {
			events = append(events, e)
		}
	}
	sort.SliceStable(events, func(i, j int) bool { return eventTime(&events[i]).Before(eventTime(&events[j])) })
	if len(events) > maxEvents {
		events = events[len(events)-maxEvents:]
	}
	return events, nil
}

// eventCount is how often the event happened, whichever API wrote it: the
// manager's events.k8s.io recorder counts repeats in series.count, the
// core/v1 recorder in count.
func eventCount(e *corev1.Event) int32 {
	if e.Series != nil && e.Series.Count > e.Count {
		return e.Series.Count
	}
	return e.Count
}

// eventTime is when the event last happened, whichever API wrote it.
func eventTime(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.FirstTimestamp.IsZero():
		return e.FirstTimestamp.Time
	}
	return e.CreationTimestamp.Time
}

func phaseLine(m *v1alpha1.Machine, now time.Time) string {
	s := machineStatus(m)
	if t := m.Status.CurrentStatus.LastUpdateTime.Time; !t.IsZero() {
		s += ", since " + age(now, t)
	}
	return s + ", created " + age(now, m.CreationTimestamp.Time) + " ago"
}

func ownerLine(f *machineFacts) string {
	if f.set == nil {
		if ref := metav1.GetControllerOf(f.m); ref != nil {
			return fmt.Sprintf("%s/%s (not found)", ref.Kind, ref.Name)
		}
		return "none"
	}
	s := "MachineSet/" + f.set.Name
	if f.deploy != "" {
		s += " of MachineDeployment/" + f.deploy
	}
	return s
}

func nodeLine(f *machineFacts, now time.Time) string {
	name := nodeName(f.m)
	switch {
	case name == "":
		return "- (the VM has not named its Node yet)"
	case f.node == nil:
		return name + " (not registered)"
	}
	return fmt.Sprintf("%s (%s, registered %s ago)", name, nodeStatus(f.node), age(now, f.node.CreationTimestamp.Time))
}

func lastOperationLine(op v1alpha1.LastOperation, now time.Time) string {
	if op.Type == "" && op.State == "" {
		return "-"
	}
	s := fmt.Sprintf("%s %s", op.Type, op.State)
	if !op.LastUpdateTime.IsZero() {
		s += ", " + age(now, op.LastUpdateTime.Time) + " ago"
	}
	if op.ErrorCode != "" {
		s += ", code " + op.ErrorCode
	}
	if op.Description != "" {
		s += ": " + truncate(oneLine(op.Description), 160)
	}
	return s
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// hasTaint tells whether the Node has a NoSchedule taint with the key.
func hasTaint(n *corev1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key && t.Effect == corev1.TaintEffectNoSchedule {
			return true
		}
	}
	return false
}

// unhealthyBecause lists why the manager counts the Node unhealthy: not
// Ready, or one of the node conditions True (as the machine controller
// checks them).
func unhealthyBecause(n *corev1.Node, t *timeoutFlags, m *v1alpha1.Machine) []string {
	var out []string
	ready := false
	bad := t.nodeConditions
	if c := machineConfig(m).NodeConditions; c != nil {
		bad = nil
		for _, s := range strings.Split(*c, ",") {
			if s = strings.TrimSpace(s); s != "" {
				bad = append(bad, s)
			}
		}
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = c.Status == corev1.ConditionTrue
			if !ready {
				out = append(out, fmt.Sprintf("Ready=%s", c.Status))
			}
		}
		for _, b := range bad {
			if string(c.Type) == b && c.Status == corev1.ConditionTrue {
				out = append(out, fmt.Sprintf("%s=True", c.Type))
			}
		}
	}
	if !ready && len(out) == 0 {
		out = append(out, "no Ready condition")
	}
	return out
}

// preUpdateHooks are the pre-update hooks on the machine and on its Node.
func preUpdateHooks(f *machineFacts) []string {
	hooks := disruption.PreUpdateHooks(f.m.Annotations)
	if f.node != nil {
		for _, h := range disruption.PreUpdateHooks(f.node.Annotations) {
			hooks = append(hooks, h+" (on Node "+f.node.Name+")")
		}
	}
	return hooks
}

// budgetHold is what md's Progressing condition says a budget holds back,
// "" when it says nothing of budgets.
func budgetHold(md *v1alpha1.MachineDeployment) string {
	for _, c := range md.Status.Conditions {
		if c.Type != v1alpha1.MachineDeploymentProgressing {
			continue
		}
		if _, after, found := strings.Cut(c.Message, disruption.MessagePrefix); found {
			return strings.TrimSuffix(after, ".")
		}
	}
	return ""
}
