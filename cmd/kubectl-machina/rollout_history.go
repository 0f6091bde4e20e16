package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// changeCauseAnnotation is kubectl's record of the command that made a
// revision; the MachineDeployment controller copies the deployment's
// annotations to the new MachineSet, this one included.
const changeCauseAnnotation = "kubernetes.io/change-cause"

// revisionHistoryAnnotation lists earlier revisions a MachineSet served
// (a rollback made its template current again).
const revisionHistoryAnnotation = "deployment.kubernetes.io/revision-history"

func newRolloutHistoryCommand(o *options) *cobra.Command {
	revision := int64(0)
	print := genericclioptions.NewPrintFlags("").WithTypeSetter(scheme)
	cmd := &cobra.Command{
		Use:   "history MACHINEDEPLOYMENT",
		Short: "List a MachineDeployment's revisions, or show one",
		Long: `history lists the revisions of a MachineDeployment: one per MachineSet it keeps
(spec.revisionHistoryLimit), numbered by the MachineSets'
deployment.kubernetes.io/revision annotations, with kubectl's change-cause. With
--revision it shows that revision's machine template; with -o the MachineSets
themselves.`,
		Example: `  kubectl machina rollout history web
  kubectl machina rollout history web --revision=2
  kubectl machina rollout history web -o yaml`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.clients()
			if err != nil {
				return err
			}
			var printer printers.ResourcePrinter
			if print.OutputFlagSpecified() {
				if printer, err = print.ToPrinter(); err != nil {
					return err
				}
			}
			return runRolloutHistory(cmd.Context(), c, args[0], revision, printer, o.streams.Out)
		},
	}
	cmd.Flags().Int64Var(&revision, "revision", 0, "show the details of this revision")
	print.AddFlags(cmd)
	return cmd
}

// history is the deployment's MachineSets, newest revision first.
func (c *clients) history(ctx context.Context, name string) (*v1alpha1.MachineDeployment, []*v1alpha1.MachineSet, error) {
	d, err := c.deployment(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	in, err := c.inventory(ctx)
	if err != nil {
		return nil, nil, err
	}
	return d, in.setsOf(d), nil
}

func runRolloutHistory(ctx context.Context, c *clients, name string, revision int64, printer printers.ResourcePrinter, out io.Writer) error {
	d, sets, err := c.history(ctx, name)
	if err != nil {
		return err
	}
	if revision > 0 {
		ms := setOfRevision(sets, revision)
		if ms == nil {
			return fmt.Errorf("unable to find the specified revision %d in the history of machinedeployment %q", revision, name)
		}
		sets = []*v1alpha1.MachineSet{ms}
	}
	if printer != nil {
		for _, ms := range sets {
			if err := printer.PrintObj(ms, out); err != nil {
				return err
			}
		}
		return nil
	}
	if revision > 0 {
		return printRevision(d, sets[0], out)
	}
	// Oldest first, as kubectl lists revisions.
	sort.SliceStable(sets, func(i, j int) bool { return revisionOf(sets[i]) < revisionOf(sets[j]) })
	fmt.Fprintf(out, "machinedeployment.machine.sapcloud.io/%s\n", d.Name)
	w := printers.GetNewTabWriter(out)
	fmt.Fprintln(w, "REVISION\tMACHINESET\tMACHINES\tCHANGE-CAUSE")
	for _, ms := range sets {
		rev := strconv.FormatInt(revisionOf(ms), 10)
		if h := ms.Annotations[revisionHistoryAnnotation]; h != "" {
			rev += " (was " + h + ")"
		}
		fmt.Fprintf(w, "%s\t%s\t%d/%d\t%s\n", rev, ms.Name, ms.Status.Replicas, ms.Spec.Replicas, orNone(ms.Annotations[changeCauseAnnotation]))
	}
	return w.Flush()
}

func setOfRevision(sets []*v1alpha1.MachineSet, revision int64) *v1alpha1.MachineSet {
	for _, ms := range sets {
		if revisionOf(ms) == revision {
			return ms
		}
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// printRevision shows one revision's machine template, as kubectl shows a
// revision's pod template.
func printRevision(d *v1alpha1.MachineDeployment, ms *v1alpha1.MachineSet, out io.Writer) error {
	tmpl := ms.Spec.Template.DeepCopy()
	delete(tmpl.Labels, v1alpha1.DefaultMachineDeploymentUniqueLabelKey)
	body, err := yaml.Marshal(tmpl)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "machinedeployment.machine.sapcloud.io/%s with revision #%d\n", d.Name, revisionOf(ms))
	fmt.Fprintf(out, "MachineSet: %s\n", ms.Name)
	fmt.Fprintf(out, "Change-cause: %s\n", orNone(ms.Annotations[changeCauseAnnotation]))
	fmt.Fprintln(out, "Machine template:")
	for _, line := range strings.Split(strings.TrimRight(string(body), "\n"), "\n") {
		fmt.Fprintf(out, "  %s\n", line)
	}
	return nil
}
