package machineclass

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/driver"
)

// Re-checks of the driver of a class. A driver that restarts may serve
// other providers than before; nothing else tells the controller, so a
// class without a driver is looked at again soon, one with a driver now
// and then.
const (
	noDriverRecheck = time.Minute
	driverRecheck   = 10 * time.Minute
)

// setDriverCondition sets the class's DriverFound condition: True when one
// driver serves its provider, False otherwise. It returns when to look
// again and what to announce once the condition is written: a Warning
// event when it turns False (its machines are then left alone) and a
// Normal one when it turns True again; nil when it did not change.
func (r *Reconciler) setDriverCondition(ctx context.Context, class *v1alpha1.MachineClass) (ctrl.Result, func(), error) {
	cond := metav1.Condition{
		Type:               v1alpha1.MachineClassDriverFound,
		ObservedGeneration: class.Generation,
	}
	recheck := driverRecheck
	dc, err := r.Drivers.ForProvider(class.Provider)
	switch {
	case err == nil:
		cond.Status = metav1.ConditionTrue
		cond.Reason = v1alpha1.MachineClassDriverServes
		cond.Message = fmt.Sprintf("Driver %s serves provider %q", dc.Name(), class.Provider)
	case errors.Is(err, driver.ErrNoDriver):
		cond.Status = metav1.ConditionFalse
		cond.Reason = v1alpha1.MachineClassNoDriver
		cond.Message = err.Error() + "; the machines of this class are left alone until a driver serves it"
		recheck = noDriverRecheck
	default:
		return ctrl.Result{}, nil, err
	}

	// A copy: SetStatusCondition below changes the condition in place.
	var old *metav1.Condition
	if class.Status != nil {
		if c := meta.FindStatusCondition(class.Status.Conditions, cond.Type); c != nil {
			prev := *c
			old = &prev
		}
	}
	if old != nil && old.Status == cond.Status && old.Reason == cond.Reason && old.Message == cond.Message && old.ObservedGeneration == cond.ObservedGeneration {
		return ctrl.Result{RequeueAfter: recheck}, nil, nil
	}
	if class.Status == nil {
		class.Status = &v1alpha1.MachineClassStatus{}
	}
	meta.SetStatusCondition(&class.Status.Conditions, cond)
	announce := func() {
		log := ctrl.LoggerFrom(ctx)
		turned := old == nil || old.Status != cond.Status
		switch {
		case cond.Status == metav1.ConditionFalse && turned:
			log.Info("No driver serves the machine class; its machines are left alone", "provider", class.Provider, "reason", err.Error())
			r.Recorder.Eventf(class, nil, corev1.EventTypeWarning, v1alpha1.MachineClassNoDriver, "Route", "%s", cond.Message)
		case cond.Status == metav1.ConditionTrue && old != nil && turned:
			log.Info("A driver serves the machine class again", "provider", class.Provider, "driver", dc.Name())
			r.Recorder.Eventf(class, nil, corev1.EventTypeNormal, v1alpha1.MachineClassDriverServes, "Route", "%s", cond.Message)
		}
	}
	return ctrl.Result{RequeueAfter: recheck}, announce, nil
}
