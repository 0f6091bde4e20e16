package machine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/phase"
	"github.com/machina-io/machina/core/internal/mcmmetrics"
	"github.com/machina-io/machina/core/internal/preservation"
)

// reconcileHealth follows the machine's Node (Driver API §11.5): a Pending
// machine becomes Running once its Node is healthy, or Failed when the
// creation timeout passes first; a Running machine whose Node turns
// unhealthy (or disappears) becomes Unknown, and Failed once it has been
// unhealthy for the health timeout; an Unknown machine whose Node recovers
// is Running again. While the freeze gate is closed no machine is failed
// by a timeout, and the meltdown guard limits how many machines of one
// MachineDeployment the health timeout fails at a time. The Node's conditions are mirrored into
// status.conditions.
func (r *Reconciler) reconcileHealth(ctx context.Context, s *scope) (phase.Result, error) {
	m := s.machine
	current := m.Status.CurrentStatus.Phase
	if r.Target == nil || s.nodeName() == "" {
		return phase.Result{}, nil
	}
	switch current {
	case v1alpha1.MachinePending, v1alpha1.MachineRunning, v1alpha1.MachineUnknown:
	case v1alpha1.MachineFailed:
		// A preserved Failed machine recovers when its Node does
		// (machine_preserve.go); any other stays Failed until replaced.
		if !preservation.ForRecovery(m, s.now) {
			return phase.Result{}, nil
		}
	default:
		return phase.Result{}, nil
	}

	node, err := r.loadNode(ctx, s)
	if err != nil {
		return phase.Result{}, err
	}
	healthy, why := r.nodeHealthy(s, node)
	if current == v1alpha1.MachinePending {
		res := r.reconcileJoin(ctx, s, node, healthy, why)
		// A booting Node changes its conditions a few times before it is
		// Ready; a Pending machine takes them along with a status write made
		// for another reason (created, joined, failed) rather than a write
		// of its own for each.
		if node != nil && !equality.Semantic.DeepEqual(s.machine.Status, s.original.Status) {
			copyNodeConditions(s, node)
		}
		return res, nil
	}
	if node != nil {
		copyNodeConditions(s, node)
	}
	if current == v1alpha1.MachineFailed {
		r.recoverPreserved(s, healthy)
		return phase.Result{}, nil
	}

	if healthy {
		m.Status.UnhealthySince = nil
		if current == v1alpha1.MachineUnknown {
			r.releasePermit(m)
			setPhase(s, v1alpha1.MachineRunning, false)
			setLastOperation(s, v1alpha1.MachineOperationHealthCheck, v1alpha1.MachineStateSuccessful, "",
				fmt.Sprintf("Node %s is healthy again", s.nodeName()))
			r.normal(s, reasonHealthy, actionHealthCheck, "Node %s is healthy again", s.nodeName())
		}
		return phase.Result{}, nil
	}
	return r.reconcileUnhealthy(ctx, s, why)
}

// reconcileUnhealthy is the health path of a machine found unhealthy (why
// says how): a Running machine (or, without a target cluster, an Available
// one whose VM is gone, machine_vmcheck.go) becomes Unknown, and an Unknown
// one becomes Failed once it has been unhealthy for the health timeout,
// unless the freeze gate is closed or the meltdown guard holds it back.
func (r *Reconciler) reconcileUnhealthy(ctx context.Context, s *scope, why string) (phase.Result, error) {
	m := s.machine
	current := m.Status.CurrentStatus.Phase
	// The health timeout counts from the first unhealthy
	// observation, stored on the Machine so that neither a restart nor a
	// status write resets it.
	if m.Status.UnhealthySince == nil {
		t := metav1.NewTime(s.now)
		m.Status.UnhealthySince = &t
	}
	if current == v1alpha1.MachineRunning || current == v1alpha1.MachineAvailable {
		setPhase(s, v1alpha1.MachineUnknown, true)
		setLastOperation(s, v1alpha1.MachineOperationHealthCheck, v1alpha1.MachineStateProcessing, "",
			fmt.Sprintf("Machine is unhealthy: %s", why))
		r.warning(s, reasonUnhealthy, actionHealthCheck, "Machine is unhealthy: %s", why)
	}
	if r.healthTimeoutDisabled(s) {
		return phase.Result{}, nil
	}
	deadline := m.Status.UnhealthySince.Add(r.healthTimeout(s))
	if s.now.Before(deadline) {
		return phase.Result{RequeueAfter: deadline.Sub(s.now)}, nil
	}
	if res, held := r.holdWhileFrozen(s, "failing an unhealthy machine by the health timeout"); held {
		return res, nil
	}
	if res, held, err := r.admitReplacement(ctx, s, why); held || err != nil {
		return res, err
	}
	desc := fmt.Sprintf("Machine has been unhealthy since %s, longer than the health timeout of %s: %s",
		m.Status.UnhealthySince.UTC().Format(time.RFC3339), r.healthTimeout(s), why)
	setPhase(s, v1alpha1.MachineFailed, false)
	setLastOperation(s, v1alpha1.MachineOperationHealthCheck, v1alpha1.MachineStateFailed, "", desc)
	r.warning(s, reasonFailed, actionHealthCheck, "%s", desc)
	return phase.Result{}, nil
}

// reconcileJoin handles a Pending machine: Running once the Node is
// healthy and free of the critical-components taint, Failed once the
// creation timeout (from creationTimestamp) has passed.
func (r *Reconciler) reconcileJoin(ctx context.Context, s *scope, node *corev1.Node, healthy bool, why string) phase.Result {
	m := s.machine
	if healthy && hasCriticalComponentsTaint(node) {
		healthy, why = false, fmt.Sprintf("node %s has the taint %s", node.Name, v1alpha1.CriticalComponentsNotReadyTaintKey)
	}
	if healthy {
		joinedIn := s.now.Sub(m.CreationTimestamp.Time).Round(time.Second)
		setPhase(s, v1alpha1.MachineRunning, false)
		m.Status.UnhealthySince = nil
		setLastOperation(s, v1alpha1.MachineOperationCreate, v1alpha1.MachineStateSuccessful, "",
			fmt.Sprintf("Machine joined the cluster as node %s in %s", node.Name, joinedIn))
		joinDuration.WithLabelValues(m.Namespace, m.Labels[v1alpha1.MachineDeploymentNameLabel]).Observe(s.now.Sub(m.CreationTimestamp.Time).Seconds())
		mcmmetrics.ObserveJoin(r.mcmLabels(ctx, s), s.now.Sub(m.CreationTimestamp.Time))
		r.normal(s, reasonJoined, actionCreate, "Joined the cluster as node %s in %s", node.Name, joinedIn)
		// The bootstrap token has done its job.
		if r.Tokens != nil {
			if err := r.Tokens.Delete(withoutClientLogs(ctx), types.NamespacedName{Namespace: m.Namespace, Name: m.Name}); err != nil {
				s.log.Error(err, "Deleting the bootstrap token of a joined machine; it expires by itself")
			}
		}
		return phase.Result{}
	}

	deadline := r.creationDeadline(s)
	if s.now.Before(deadline) {
		return phase.Result{RequeueAfter: deadline.Sub(s.now)}
	}
	if res, held := r.holdWhileFrozen(s, "failing a machine that did not join by the creation timeout"); held {
		return res
	}
	desc := fmt.Sprintf("Machine did not join the cluster within the creation timeout of %s: %s", r.creationTimeout(s), why)
	setPhase(s, v1alpha1.MachineFailed, false)
	setLastOperation(s, v1alpha1.MachineOperationCreate, v1alpha1.MachineStateFailed, "", desc)
	r.warning(s, reasonFailed, actionCreate, "%s", desc)
	mcmmetrics.CountFailedJoin(r.mcmLabels(ctx, s))
	return phase.Result{}
}

// nodeHealthy tells whether the Node is healthy: it exists, is Ready, and
// none of the machine's node conditions is True. why says what is wrong.
func (r *Reconciler) nodeHealthy(s *scope, node *corev1.Node) (bool, string) {
	if node == nil {
		return false, fmt.Sprintf("node %s not found", s.nodeName())
	}
	var problems []string
	ready := false
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = c.Status == corev1.ConditionTrue
			if !ready {
				problems = append(problems, fmt.Sprintf("Ready=%s", c.Status))
			}
		}
	}
	if !ready && len(problems) == 0 {
		problems = append(problems, "no Ready condition")
	}
	bad := r.nodeConditions(s)
	for _, c := range node.Status.Conditions {
		if c.Status == corev1.ConditionTrue && slices.Contains(bad, string(c.Type)) {
			problems = append(problems, fmt.Sprintf("%s=True", c.Type))
		}
	}
	if len(problems) > 0 {
		return false, fmt.Sprintf("node %s: %s", node.Name, strings.Join(problems, ", "))
	}
	return true, ""
}

func hasCriticalComponentsTaint(node *corev1.Node) bool {
	for _, t := range node.Spec.Taints {
		if t.Key == v1alpha1.CriticalComponentsNotReadyTaintKey && t.Effect == corev1.TaintEffectNoSchedule {
			return true
		}
	}
	return false
}
