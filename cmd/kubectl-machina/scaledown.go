package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/scaledown"
)

func newScaleDownCommand(o *options) *cobra.Command {
	dryRun := false
	replicas := int32(-1)
	print := genericclioptions.NewPrintFlags("").WithTypeSetter(scheme)
	cmd := &cobra.Command{
		Use:   "scale-down --dry-run (MACHINEDEPLOYMENT | machineset/NAME) --replicas=N",
		Short: "Show which machines a scale-down would delete first, and why",
		Long: `scale-down --dry-run shows the machines a MachineSet deletes when it is scaled to
--replicas, in the MachineSet controller's order (core/scaledown): machines not
preserved first, then the lower machinepriority annotation, machines marked for
deletion (earliest mark first), the phase (Terminating, Failed, CrashLoopBackOff,
Unknown, creating, Pending, Available, Running), the newer machine, the name. For
each machine it deletes it names the key that put it before the machines that
stay. Failed machines that are not preserved are replaced whatever the replicas,
and machines already being deleted do not count; both are listed apart.

A MachineDeployment is scaled through its MachineSet; one in the middle of a
rollout (more than one MachineSet with machines) spreads a scale-down over its
sets: name the MachineSet (machineset/NAME) then. It changes nothing; -o name
lists the machines it would delete.`,
		Example: `  kubectl machina scale-down --dry-run web --replicas=2
  kubectl machina scale-down --dry-run machineset/web-5d8f --replicas=0 -o name`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !dryRun {
				return errors.New("scale-down only runs with --dry-run; kubectl scale machinedeployment NAME --replicas=N scales")
			}
			if replicas < 0 {
				return errors.New("--replicas is required and must be 0 or more")
			}
			c, err := o.clients()
			if err != nil {
				return err
			}
			p, err := planScaleDown(cmd.Context(), c, args[0], replicas, o.now())
			if err != nil {
				return err
			}
			if print.OutputFlagSpecified() {
				printer, err := print.ToPrinter()
				if err != nil {
					return err
				}
				for _, m := range p.deletions() {
					if err := printer.PrintObj(m, o.streams.Out); err != nil {
						return err
					}
				}
				return nil
			}
			return p.print(o.streams.Out, o.now())
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "show what the scale-down would do without doing it (required)")
	cmd.Flags().Int32Var(&replicas, "replicas", -1, "the replicas to scale to")
	print.AddFlags(cmd)
	return cmd
}

// scaleDownPlan is what the MachineSet controller would do to the set at
// the new replicas (core/internal/controller/machineset, computePlan).
type scaleDownPlan struct {
	set      *v1alpha1.MachineSet
	deploy   string
	replicas int32
	// ordered are the counted machines in deletion order; the first
	// victims of them go.
	ordered []*v1alpha1.Machine
	victims int
	// replaced are the Failed machines that are not preserved: deleted and
	// replaced at any replicas.
	replaced []*v1alpha1.Machine
	// going are the machines already being deleted; they do not count.
	going []*v1alpha1.Machine
}

func (p *scaleDownPlan) deletions() []*v1alpha1.Machine {
	return append(append([]*v1alpha1.Machine(nil), p.replaced...), p.ordered[:p.victims]...)
}

func planScaleDown(ctx context.Context, c *clients, target string, replicas int32, now time.Time) (*scaleDownPlan, error) {
	in, err := c.inventory(ctx)
	if err != nil {
		return nil, err
	}
	p := &scaleDownPlan{replicas: replicas}
	if name, ok := cutPrefixes(target, "machineset/", "machinesets/", "ms/", "machineset.machine.sapcloud.io/"); ok {
		for _, ms := range in.sets {
			if ms.Name == name {
				p.set = ms
			}
		}
		if p.set == nil {
			return nil, fmt.Errorf("machinesets.machine.sapcloud.io %q not found in namespace %q", name, c.namespace)
		}
	} else {
		name, _ := cutPrefixes(target, "machinedeployment/", "machinedeployments/", "md/", "machinedeployment.machine.sapcloud.io/")
		d := in.deploymentNamed(name)
		if d == nil {
			return nil, fmt.Errorf("machinedeployments.machine.sapcloud.io %q not found in namespace %q", name, c.namespace)
		}
		p.deploy = d.Name
		var active []*v1alpha1.MachineSet
		sets := in.setsOf(d)
		for _, ms := range sets {
			if ms.Spec.Replicas > 0 || len(in.machinesOf(ms)) > 0 {
				active = append(active, ms)
			}
		}
		switch {
		case len(active) == 1:
			p.set = active[0]
		case len(active) == 0 && len(sets) > 0:
			p.set = sets[0]
		case len(active) == 0:
			return nil, fmt.Errorf("machinedeployment %q has no MachineSet", name)
		default:
			return nil, fmt.Errorf("machinedeployment %q is rolling out: %d MachineSets have machines, and a scale-down spreads over them; name one (machineset/NAME)", name, len(active))
		}
	}
	var counted []*v1alpha1.Machine
	for _, m := range in.machinesOf(p.set) {
		switch {
		case m.DeletionTimestamp != nil || m.Status.CurrentStatus.Phase == v1alpha1.MachineTerminating:
			p.going = append(p.going, m)
		case m.Status.CurrentStatus.Phase == v1alpha1.MachineFailed && !scaledown.Preserved(m, now):
			p.replaced = append(p.replaced, m)
		default:
			counted = append(counted, m)
		}
	}
	p.ordered = append([]*v1alpha1.Machine(nil), counted...)
	scaledown.Sort(p.ordered, now)
	p.victims = max(0, len(counted)-int(replicas))
	return p, nil
}

func cutPrefixes(s string, prefixes ...string) (string, bool) {
	for _, pre := range prefixes {
		if len(s) > len(pre) && s[:len(pre)] == pre {
			return s[len(pre):], true
		}
	}
	return s, false
}

func (p *scaleDownPlan) print(out io.Writer, now time.Time) error {
	of := ""
	if p.deploy != "" {
		of = " of MachineDeployment " + p.deploy
	}
	fmt.Fprintf(out, "MachineSet %s%s: %d machines count, %d wanted now; at %d replicas it deletes %d.\n",
		p.set.Name, of, len(p.ordered), p.set.Spec.Replicas, p.replicas, p.victims)
	if len(p.ordered) > 0 {
		fmt.Fprintln(out)
		w := printers.GetNewTabWriter(out)
		fmt.Fprintln(w, "ORDER\tMACHINE\tACTION\tPHASE\tPRIORITY\tAGE\tWHY FIRST")
		var firstKept *v1alpha1.Machine
		if p.victims < len(p.ordered) {
			firstKept = p.ordered[p.victims]
		}
		for i, m := range p.ordered {
			action, why := "keep", "-"
			if i < p.victims {
				action, why = "delete", whyFirst(m, firstKept, now)
			}
			fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%d\t%s\t%s\n", i+1, m.Name, action, machineStatus(m), scaledown.Priority(m), age(now, m.CreationTimestamp.Time), why)
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
	if len(p.replaced) > 0 {
		fmt.Fprintln(out, "\nDeleted and replaced at any replicas (Failed, not preserved):")
		for _, m := range p.replaced {
			fmt.Fprintf(out, "  %s\n", m.Name)
		}
	}
	if len(p.going) > 0 {
		fmt.Fprintln(out, "\nAlready being deleted (not counted):")
		for _, m := range p.going {
			fmt.Fprintf(out, "  %s\n", m.Name)
		}
	}
	return nil
}

// whyFirst names the key that orders the victim before the first machine
// that stays.
func whyFirst(victim, kept *v1alpha1.Machine, now time.Time) string {
	if kept == nil {
		return "every machine goes"
	}
	key, _ := scaledown.Decide(victim, kept, now)
	switch key {
	case scaledown.KeyPreserved:
		return "not preserved (" + kept.Name + " is)"
	case scaledown.KeyPriority:
		return "machinepriority " + strconv.Itoa(scaledown.Priority(victim)) + " < " + strconv.Itoa(scaledown.Priority(kept))
	case scaledown.KeyMarked:
		mark := scaledown.MarkedForDeletion(victim).UTC().Format(time.RFC3339)
		if scaledown.MarkedForDeletion(kept).IsZero() {
			return "marked for deletion at " + mark
		}
		return "marked for deletion earlier, at " + mark
	case scaledown.KeyPhase:
		return "phase " + machineStatus(victim) + " before " + machineStatus(kept)
	case scaledown.KeyAge:
		return "newer than " + kept.Name
	}
	return "name sorts before " + kept.Name
}
