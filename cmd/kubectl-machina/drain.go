package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/printers"
)

func newDrainCommand(o *options) *cobra.Command {
	dryRun := false
	cmd := &cobra.Command{
		Use:   "drain --dry-run NODE",
		Short: "Show which pods a drain of a Node would evict, in which order, and what blocks them",
		Long: `drain --dry-run shows what machina's drain would do to a Node if its Machine were
deleted now: the pods it evicts, in the core's order (the pods that are not
critical first, then those of the system-cluster-critical and system-node-critical
priority classes; in each group every pod without a PersistentVolumeClaim in one
step, then the pods with claims one at a time, highest priority first, each
waiting for its volumes to detach; the MachineDrainRules that select the Node's
Machine order it further, leave pods, or make it wait for pods to complete), the
PodDisruptionBudgets that would refuse an eviction now, the VolumeAttachments it
would wait for, and the pods it leaves on the Node. It changes nothing.

Without --dry-run it refuses: machina drains a Node when it deletes the Node's
Machine.`,
		Example: `  kubectl machina drain --dry-run node-1`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !dryRun {
				return errors.New("drain only runs with --dry-run: machina drains a Node when it deletes its Machine (kubectl delete machine NAME); kubectl drain drains one by hand")
			}
			c, err := o.clients()
			if err != nil {
				return err
			}
			return runDrainDryRun(cmd.Context(), c, args[0], o.streams.Out)
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "show what the drain would do without doing it (required)")
	return cmd
}

func runDrainDryRun(ctx context.Context, c *clients, nodeName string, out io.Writer) error {
	p, err := planDrain(ctx, c, nodeName, nil)
	if err != nil {
		return err
	}
	if p.node == nil {
		return fmt.Errorf("nodes %q not found", nodeName)
	}
	steps := 0
	if n := len(p.evict); n > 0 {
		steps = p.evict[n-1].step
	}
	waits := 0
	for _, pp := range p.evict {
		if pp.waitFor != "" {
			waits++
		}
	}
	if waits == 0 {
		fmt.Fprintf(out, "Node %s (%s): the drain evicts %d pods in %d steps; %d pods stay.\n",
			nodeName, nodeStatus(p.node), len(p.evict), steps, len(p.skipped))
	} else {
		fmt.Fprintf(out, "Node %s (%s): the drain evicts %d pods and waits for %d to complete, in %d steps; %d pods stay.\n",
			nodeName, nodeStatus(p.node), len(p.evict)-waits, waits, steps, len(p.skipped))
	}
	if len(p.evict) > 0 {
		fmt.Fprintln(out)
		w := printers.GetNewTabWriter(out)
		fmt.Fprintln(w, "STEP\tPOD\tPRIORITY\tVOLUMES\tWAITS FOR")
		for _, pp := range p.evict {
			fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\n", pp.step, podKey(&pp.pod), podPriority(&pp), volumesColumn(&pp), waitsFor(&pp))
		}
		if err := w.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(out)
		fmt.Fprintln(out, "A step evicts every pod without a PersistentVolumeClaim of its group at once, or one pod with")
		fmt.Fprintln(out, "claims and waits until its volumes have detached from the node (at most the manager's")
		fmt.Fprintln(out, "--machine-pv-detach-timeout, 2m by default) before the next one. Critical pods")
		fmt.Fprintln(out, "(system-cluster-critical, system-node-critical) come after every other pod is gone.")
		if waits > 0 || hasOrders(p) {
			fmt.Fprintln(out, "MachineDrainRules order the steps (lower drain order first, each order after the")
			fmt.Fprintln(out, "previous one is gone); a pod waited for is not evicted, its step ends when it has completed.")
		}
	}
	if blocked := blockers(p); len(blocked) > 0 {
		fmt.Fprintln(out)
		fmt.Fprintln(out, "Blocked now:")
		for _, b := range blocked {
			fmt.Fprintf(out, "  %s\n", b)
		}
	}
	if len(p.skipped) > 0 {
		fmt.Fprintln(out)
		fmt.Fprintln(out, "Left on the node:")
		w := printers.GetNewTabWriter(out)
		for _, s := range p.skipped {
			fmt.Fprintf(w, "  %s\t%s\n", podKey(&s.pod), s.reason)
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
	return nil
}

func podPriority(pp *plannedPod) string {
	if pp.pod.Spec.Priority == nil {
		return "0"
	}
	return strconv.Itoa(int(*pp.pod.Spec.Priority))
}

func volumesColumn(pp *plannedPod) string {
	if len(pp.volumes) == 0 {
		return "-"
	}
	s := strings.Join(pp.volumes, ",")
	if len(pp.attached) > 0 {
		s += " (attached: " + strings.Join(pp.attached, ",") + ")"
	}
	return s
}

// hasOrders tells whether a pod of the plan has a drain order other than 0.
func hasOrders(p *drainPlan) bool {
	for _, pp := range p.evict {
		if pp.order != 0 {
			return true
		}
	}
	return false
}

func waitsFor(pp *plannedPod) string {
	var parts []string
	if pp.waitFor != "" {
		parts = append(parts, "completion, not evicted ("+pp.waitFor+")")
	}
	if pp.order != 0 {
		parts = append(parts, fmt.Sprintf("drain order %d", pp.order))
	}
	if pp.terminating {
		parts = append(parts, "already terminating")
	}
	parts = append(parts, pp.blockedBy...)
	parts = append(parts, pp.limitedBy...)
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, "; ")
}

// blockers lists each budget that refuses an eviction now, with its pods.
func blockers(p *drainPlan) []string {
	pods := map[string][]string{}
	var order []string
	for _, pp := range p.evict {
		for _, b := range pp.blockedBy {
			if _, ok := pods[b]; !ok {
				order = append(order, b)
			}
			pods[b] = append(pods[b], podKey(&pp.pod))
		}
	}
	out := make([]string, 0, len(order))
	for _, b := range order {
		out = append(out, fmt.Sprintf("%s: %s", b, strings.Join(pods[b], ", ")))
	}
	return out
}
