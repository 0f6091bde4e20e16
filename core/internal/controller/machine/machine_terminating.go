package machine

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/setup"
)

// markNodeTerminating sets the node condition Terminating=True on the
// machine's Node before the deletion drains it, as MCM does
// (machine-controller-manager pkg/util/provider/machinecontroller
// machine_util.go, UpdateNodeTerminationCondition): reason Unhealthy when
// the machine is deleted because it Failed, ScaleDown otherwise. Pods and
// operators (the cluster-autoscaler, node-problem-detector dashboards) can
// tell a node that is going away from one that is only cordoned. It runs
// before the phase turns Terminating, since the reason depends on the
// phase the machine had; a condition already True is left as it is, so a
// retry never rewrites the reason.
func (r *Reconciler) markNodeTerminating(ctx context.Context, s *scope) error {
	node, err := r.loadNode(ctx, s)
	if err != nil || node == nil {
		return err
	}
	for _, c := range node.Status.Conditions {
		if c.Type == v1alpha1.NodeTerminationCondition && c.Status == corev1.ConditionTrue {
			return nil
		}
	}
	reason, msg := v1alpha1.NodeScaledDown, fmt.Sprintf("Machine %s is being deleted", s.machine.Name)
	if s.machine.Status.CurrentStatus.Phase == v1alpha1.MachineFailed {
		reason, msg = v1alpha1.NodeUnhealthy, fmt.Sprintf("Machine %s Failed and is being deleted", s.machine.Name)
	}
	now := metav1.NewTime(s.now)
	cond := corev1.NodeCondition{
		Type: v1alpha1.NodeTerminationCondition, Status: corev1.ConditionTrue,
		Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: now,
	}
	// A strategic merge patch merges conditions by type: the kubelet's own
	// conditions, written concurrently, are not overwritten.
	updated := node.DeepCopy()
	updated.Status.Conditions = append(updated.Status.Conditions, cond)
	if err := r.writeNode(ctx, node, updated, setup.Strategic()); err != nil {
		return fmt.Errorf("setting condition %s on node %s: %w", v1alpha1.NodeTerminationCondition, node.Name, err)
	}
	s.node = updated
	return nil
}
