package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/controller-runtime/pkg/client"

	machinaio "github.com/machina-io/machina/core/api/machina/v1alpha1"
	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// healthChecks is what "why" knows of the MachineHealthChecks of a machine.
type healthChecks struct {
	// installed is false when the cluster does not serve
	// machina.io/v1alpha1 MachineHealthChecks (MCM's cluster, or machina
	// without that CRD): "why" then says nothing of them.
	installed bool
	// unreadable, when set, says why they could not be listed (forbidden).
	unreadable string
	// selecting are the checks whose selector matches the machine, by name.
	selecting []machinaio.MachineHealthCheck
}

// healthChecksOf lists the MachineHealthChecks of the machine's namespace
// and keeps those that select it, as the health check controller selects
// machines (its selector, in its namespace). A check whose selector does
// not parse selects nothing there either.
func (c *clients) healthChecksOf(ctx context.Context, m *v1alpha1.Machine) (*healthChecks, error) {
	var l machinaio.MachineHealthCheckList
	err := c.control.List(ctx, &l, client.InNamespace(m.Namespace))
	switch {
	case meta.IsNoMatchError(err), apierrors.IsNotFound(err):
		return &healthChecks{}, nil
	case apierrors.IsForbidden(err):
		return &healthChecks{installed: true, unreadable: "forbidden to list MachineHealthChecks in namespace " + m.Namespace}, nil
	case err != nil:
		return nil, fmt.Errorf("listing MachineHealthChecks: %w", err)
	}
	hc := &healthChecks{installed: true}
	for _, check := range l.Items {
		sel, err := metav1.LabelSelectorAsSelector(&check.Spec.Selector)
		if err != nil || sel.Empty() {
			continue
		}
		if sel.Matches(labels.Set(m.Labels)) {
			hc.selecting = append(hc.selecting, check)
		}
	}
	sort.Slice(hc.selecting, func(i, j int) bool { return hc.selecting[i].Name < hc.selecting[j].Name })
	return hc, nil
}

// printHealthChecks writes the "Health checks" section: each selecting
// check's RemediationAllowed condition, then what the machine's annotations
// change about it.
func printHealthChecks(out io.Writer, hc *healthChecks, m *v1alpha1.Machine, now time.Time) error {
	switch {
	case !hc.installed:
		return nil
	case hc.unreadable != "":
		fmt.Fprintf(out, "\nHealth checks: unknown (%s)\n", hc.unreadable)
		return nil
	case len(hc.selecting) == 0:
		fmt.Fprintln(out, "\nHealth checks: no MachineHealthCheck selects this machine; only the manager's health timeout (--machine-health-timeout) applies")
		return nil
	}
	fmt.Fprintln(out, "\nHealth checks (MachineHealthCheck):")
	w := printers.GetNewTabWriter(out)
	fmt.Fprintln(w, "  NAME\tREMEDIATION ALLOWED\tREASON\tAGE\tMESSAGE")
	for _, check := range hc.selecting {
		c := meta.FindStatusCondition(check.Status.Conditions, machinaio.RemediationAllowedCondition)
		if c == nil {
			fmt.Fprintf(w, "  %s\t-\t-\t-\tnot checked yet (no %s condition)\n", check.Name, machinaio.RemediationAllowedCondition)
			continue
		}
		msg := oneLine(c.Message)
		if c.ObservedGeneration != 0 && c.ObservedGeneration < check.Generation {
			msg += " (of an older spec)"
		}
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\n", check.Name, c.Status, orDash(c.Reason), age(now, c.LastTransitionTime.Time), truncate(msg, 120))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	// The controller leaves a skipped machine out before it looks for
	// remediate-machine, so skip-remediation wins.
	if key := annotationOf(m, machinaio.SkipRemediationAnnotation, machinaio.ClusterAPISkipRemediationAnnotation); key != "" {
		fmt.Fprintf(out, "  This machine has %s: every check leaves it out, neither counted nor remediated\n", key)
	} else if key := annotationOf(m, machinaio.RemediateMachineAnnotation, machinaio.ClusterAPIRemediateMachineAnnotation); key != "" {
		fmt.Fprintf(out, "  This machine has %s: the checks count it unhealthy and remediate it while they allow remediation\n", key)
	}
	return nil
}

// annotationOf returns the first of the keys the machine carries (any
// value), or "".
func annotationOf(m *v1alpha1.Machine, keys ...string) string {
	for _, k := range keys {
		if _, ok := m.Annotations[k]; ok {
			return k
		}
	}
	return ""
}
