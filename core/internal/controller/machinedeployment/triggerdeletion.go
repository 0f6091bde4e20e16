package machinedeployment

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/phase"
)

// triggerEntry is one machine named in the trigger-deletion annotation.
type triggerEntry struct {
	raw  string // the entry as written, kept verbatim while pending
	name string
	at   string // RFC 3339 time of the autoscaler's decision
}

// parseTriggerDeletion reads the annotation value: comma-separated entries,
// each "name~RFC3339" (the autoscaler's format) or a plain "name" (then the
// decision time is plainAt). Malformed entries are dropped, as MCM does; the
// autoscaler writes them again if it still wants the machine gone.
func parseTriggerDeletion(value string, plainAt time.Time) []triggerEntry {
	var out []triggerEntry
	seen := map[string]bool{}
	for raw := range strings.SplitSeq(value, ",") {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			continue
		}
		e := triggerEntry{raw: raw, name: raw, at: plainAt.UTC().Format(time.RFC3339)}
		if name, at, ok := strings.Cut(raw, "~"); ok {
			if _, err := time.Parse(time.RFC3339, at); err != nil || name == "" {
				continue
			}
			e.name, e.at = name, at
		}
		if seen[e.name] {
			continue
		}
		seen[e.name] = true
		out = append(out, e)
	}
	return out
}

// scalerDecisionTime is the time of a plain name in the trigger-deletion
// annotation: the deployment's last-deployment-replica-change-by-scaler-time
// when it holds an RFC 3339 time (the scaler's own record of its decision),
// else now, as MCM's adjustingMachineDeploymentDeletionAnnotations does
// (machine-controller-manager pkg/controller/deployment.go).
func scalerDecisionTime(d *v1alpha1.MachineDeployment, now time.Time) time.Time {
	if t, err := time.Parse(time.RFC3339, d.Annotations[v1alpha1.LastReplicaChangeByScalerTimeAnnotation]); err == nil {
		return t
	}
	return now
}

// triggerDeletion is the phase that serves the cluster-autoscaler's
// scale-down protocol: the autoscaler names the machines it wants deleted in
// the trigger-deletion annotation and lowers replicas in the same update. Each named machine of
// this deployment gets machinepriority=1 and a marked-for-deletion-time, so
// that the machine set picks exactly those machines when it shrinks; this
// happens before any machine set is scaled in this sync. A name stays in the
// annotation until its machine is gone, failed or terminating (the autoscaler
// relies on that not to count a pending deletion twice); unknown names and
// machines of other deployments are dropped.
func (r *Reconciler) triggerDeletion(ctx context.Context, s *scope) (phase.Result, error) {
	return phase.Result{}, r.handleTriggerDeletion(ctx, s)
}

func (r *Reconciler) handleTriggerDeletion(ctx context.Context, s *scope) error {
	d := s.d
	value := d.Annotations[v1alpha1.TriggerDeletionByMCMAnnotation]
	if value == "" {
		return nil
	}
	log := ctrl.LoggerFrom(ctx)
	var keep []string
	for _, e := range parseTriggerDeletion(value, scalerDecisionTime(d, s.now)) {
		m, err := r.deploymentMachine(ctx, s, e.name)
		if err != nil {
			return err
		}
		switch {
		case m == nil:
			log.Info("Dropping machine from the trigger-deletion annotation: not a machine of this deployment", "machine", e.name)
			continue
		case m.DeletionTimestamp != nil, m.Status.CurrentStatus.Phase == v1alpha1.MachineTerminating,
			m.Status.CurrentStatus.Phase == v1alpha1.MachineFailed:
			// Handled: the machine is on its way out.
			continue
		}
		keep = append(keep, e.raw)
		if err := r.markForDeletion(ctx, m, e.at); err != nil {
			return err
		}
	}
	if next := strings.Join(keep, ","); next != value {
		return r.patchDeploymentMeta(ctx, s, func(d *v1alpha1.MachineDeployment) {
			if next == "" {
				delete(d.Annotations, v1alpha1.TriggerDeletionByMCMAnnotation)
			} else {
				d.Annotations[v1alpha1.TriggerDeletionByMCMAnnotation] = next
			}
		})
	}
	return nil
}

// deploymentMachine returns the named machine if it belongs to one of the
// deployment's machine sets. The cache may not have a machine created a
// moment ago, so a miss is checked against the API server.
func (r *Reconciler) deploymentMachine(ctx context.Context, s *scope, name string) (*v1alpha1.Machine, error) {
	for _, ms := range s.sets {
		for _, m := range s.machines[ms.UID] {
			if m.Name == name {
				return m, nil
			}
		}
	}
	m := &v1alpha1.Machine{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: s.d.Namespace, Name: name}, m); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading machine %s: %w", name, err)
	}
	ref := metav1.GetControllerOf(m)
	for _, ms := range s.sets {
		if ref != nil && ref.UID == ms.UID {
			return m, nil
		}
	}
	return nil, nil
}

// markForDeletion sets machinepriority=1 and, if absent, the
// marked-for-deletion-time on a machine.
func (r *Reconciler) markForDeletion(ctx context.Context, m *v1alpha1.Machine, at string) error {
	if m.Annotations[v1alpha1.MachinePriorityAnnotation] == v1alpha1.TriggeredForDeletionPriority && m.Annotations[v1alpha1.MarkedForDeletionTimeAnnotation] != "" {
		return nil
	}
	updated := m.DeepCopy()
	if updated.Annotations == nil {
		updated.Annotations = map[string]string{}
	}
	updated.Annotations[v1alpha1.MachinePriorityAnnotation] = v1alpha1.TriggeredForDeletionPriority
	if updated.Annotations[v1alpha1.MarkedForDeletionTimeAnnotation] == "" {
		updated.Annotations[v1alpha1.MarkedForDeletionTimeAnnotation] = at
	}
	if err := r.Client.Patch(ctx, updated, client.MergeFrom(m)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("marking machine %s for deletion: %w", m.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Marked machine for deletion on the autoscaler's request", "machine", m.Name)
	return nil
}
