package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
	// external says, for each selecting check that remediates through a
	// template, what stands of the machine's remediation request.
	external map[string]remediationRequest
}

// remediationRequest is what "why" found of a machine's external
// remediation request: the request's creation, or why there is none.
type remediationRequest struct {
	kind    string
	created time.Time // zero when none stands
	note    string
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
	for i := range hc.selecting {
		check := &hc.selecting[i]
		if check.Spec.RemediationTemplate == nil {
			continue
		}
		if hc.external == nil {
			hc.external = map[string]remediationRequest{}
		}
		hc.external[check.Name] = c.remediationRequest(ctx, check, m)
	}
	return hc, nil
}

// remediationRequest looks up m's external remediation request under
// check: the health check controller names the request after the machine,
// in its namespace, of the template's kind without "Template".
func (c *clients) remediationRequest(ctx context.Context, check *machinaio.MachineHealthCheck, m *v1alpha1.Machine) remediationRequest {
	ref := check.Spec.RemediationTemplate
	r := remediationRequest{kind: strings.TrimSuffix(ref.Kind, machinaio.TemplateSuffix)}
	req := &unstructured.Unstructured{}
	req.SetAPIVersion(ref.APIVersion)
	req.SetKind(r.kind)
	err := c.control.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Name}, req)
	switch {
	case apierrors.IsNotFound(err):
		r.note = fmt.Sprintf("none requested (an unhealthy machine gets a %s %s, from template %s)", r.kind, m.Name, ref.Name)
	case meta.IsNoMatchError(err):
		r.note = fmt.Sprintf("unknown: the API server serves no %s in %s", r.kind, ref.APIVersion)
	case apierrors.IsForbidden(err):
		r.note = fmt.Sprintf("unknown (forbidden to get %s %s)", r.kind, m.Name)
	case err != nil:
		r.note = fmt.Sprintf("unknown (%v)", err)
	case req.GetDeletionTimestamp() != nil:
		r.note = fmt.Sprintf("%s %s is being deleted (the machine is healthy again, or going)", r.kind, m.Name)
	default:
		r.created = req.GetCreationTimestamp().Time
	}
	return r
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
	for _, check := range hc.selecting {
		r, ok := hc.external[check.Name]
		switch {
		case !ok:
		case r.created.IsZero():
			fmt.Fprintf(out, "  External remediation (%s): %s\n", check.Name, r.note)
		default:
			fmt.Fprintf(out, "  External remediation (%s): %s %s requested %s ago: its controller remediates the machine\n",
				check.Name, r.kind, m.Name, age(now, r.created))
		}
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
