package machine

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/phase"
	"github.com/machina-io/machina/core/internal/driver"
	"github.com/machina-io/machina/core/internal/driverclass"
)

// configError is a MachineClass or Secret the machine needs but cannot
// use (not there yet, or malformed). It is the user's to fix; the machine
// waits, and nothing is lost.
type configError struct{ msg string }

func (e *configError) Error() string { return e.msg }

// loadClass reads the Machine's class and its Secrets into the scope: the
// data of credentialsSecretRef and secretRef merged (credentialsSecretRef
// wins on a key in both, §4.5 of the Driver API), with userData taken out.
func (r *Reconciler) loadClass(ctx context.Context, s *scope) error {
	if s.class != nil {
		return nil
	}
	name := s.machine.Spec.Class.Name
	if name == "" {
		return &configError{"spec.class.name is empty"}
	}
	class := &v1alpha1.MachineClass{}
	if err := r.Control.Get(ctx, client.ObjectKey{Namespace: s.machine.Namespace, Name: name}, class); err != nil {
		if apierrors.IsNotFound(err) {
			return &configError{fmt.Sprintf("MachineClass %s/%s not found", s.machine.Namespace, name)}
		}
		return fmt.Errorf("reading MachineClass %s: %w", name, err)
	}
	if len(class.ProviderSpec.Raw) == 0 {
		return &configError{fmt.Sprintf("MachineClass %s has no providerSpec", name)}
	}
	dc, err := r.Drivers.ForProvider(class.Provider)
	if err != nil {
		return err
	}

	secrets, userData, err := driverclass.Secrets(withoutClientLogs(ctx), r.Control, class)
	if err != nil {
		var missing *driverclass.MissingSecretError
		if errors.As(err, &missing) {
			return &configError{fmt.Sprintf("Secret %s of MachineClass %s not found", missing.Ref, name)}
		}
		return fmt.Errorf("MachineClass %s: %w", name, err)
	}
	s.userData = userData
	s.secrets = secrets
	s.class = class
	s.driver = dc
	s.log = s.log.WithValues("driver", dc.Name())
	return nil
}

// classProblem records a configError on the machine: lastOperation Failed
// of the given operation, a Warning event, and a retry. The phase stays: a
// missing class is not the machine's failure, and the watches on classes
// and Secrets retry as soon as they appear.
//
// A class whose provider no driver serves (driver.ErrNoDriver) leaves the
// machine alone: nothing is written, no event is emitted (the MachineClass
// controller reports it on the class), and the machine is looked at again
// after MediumRetry or when its class changes. It is not a driver failure:
// no phase changes, so nothing is failed, replaced or deleted for it.
func (r *Reconciler) classProblem(s *scope, op v1alpha1.MachineOperationType, err error) (phase.Result, error) {
	if errors.Is(err, driver.ErrNoDriver) {
		s.log.Info("Leaving the machine alone: no driver serves its class", "operation", string(op), "reason", err.Error())
		return phase.Result{RequeueAfter: r.Options.MediumRetry, Stop: true}, nil
	}
	var ce *configError
	if !errors.As(err, &ce) {
		return phase.Result{}, err
	}
	desc := "Cannot use the machine class: " + ce.msg
	if s.machine.Status.LastOperation.Description != desc {
		r.warning(s, reasonClassNotReady, string(op), "%s", desc)
	}
	setLastOperation(s, op, v1alpha1.MachineStateFailed, "", desc)
	return phase.Result{RequeueAfter: r.Options.MediumRetry, Stop: true}, nil
}
