package mcpool

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
)

// The pool's condition types.
const (
	typeUpdated        = mcv1.PoolUpdated
	typeUpdating       = mcv1.PoolUpdating
	typeDegraded       = mcv1.PoolDegraded
	typeNodeDegraded   = mcv1.PoolNodeDegraded
	typeRenderDegraded = mcv1.PoolRenderDegraded
)

// setCondition puts c into the pool's conditions; the transition time
// moves only when the status changes (meta.SetStatusCondition).
func setCondition(p *mcv1.MachineConfigPool, c condition, now time.Time) {
	meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{
		Type: c.typ, Status: metav1.ConditionStatus(c.status), Reason: c.reason, Message: c.message,
		ObservedGeneration: p.Generation, LastTransitionTime: metav1.NewTime(now),
	})
}

// renderDegraded is the render controller's RenderDegraded message, or ""
// when the pool renders fine.
func renderDegraded(p *mcv1.MachineConfigPool) string {
	if c := meta.FindStatusCondition(p.Status.Conditions, typeRenderDegraded); c != nil && c.Status == metav1.ConditionTrue {
		return c.Message
	}
	return ""
}
