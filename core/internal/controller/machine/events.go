package machine

import (
	corev1 "k8s.io/api/core/v1"
)

// Event reasons. Normal events tell a person the machine moved on; Warning
// events tell why it did not. Notes never carry secret values: they hold
// names, codes and the driver's message, which the Driver API forbids to
// contain secrets.
const (
	reasonCreated           = "Created"
	reasonAdopted           = "Adopted"
	reasonInitialized       = "Initialized"
	reasonJoined            = "Joined"
	reasonHealthy           = "Healthy"
	reasonUnhealthy         = "Unhealthy"
	reasonFailed            = "Failed"
	reasonCreateFailed      = "CreateFailed"
	reasonStaleNode         = "StaleNode"
	reasonClassNotReady     = "ClassNotReady"
	reasonTokenFailed       = "BootstrapTokenFailed"
	reasonDeleting          = "Deleting"
	reasonDraining          = "Draining"
	reasonDrainFailed       = "DrainFailed"
	reasonForceDrain        = "ForceDrain"
	reasonDeleteFailed      = "DeleteFailed"
	reasonNodeTemplateSync  = "NodeTemplateSyncFailed"
	reasonInvalidAnnotation = "InvalidAnnotation"
)

// Actions of events (events.k8s.io requires one): what the controller was
// doing.
const (
	actionCreate      = "Create"
	actionHealthCheck = "HealthCheck"
	actionDrain       = "Drain"
	actionDelete      = "Delete"
	actionSync        = "SyncNode"
)

func (r *Reconciler) normal(s *scope, reason, action, note string, args ...any) {
	r.Recorder.Eventf(s.machine, nil, corev1.EventTypeNormal, reason, action, note, args...)
}

func (r *Reconciler) warning(s *scope, reason, action, note string, args ...any) {
	r.Recorder.Eventf(s.machine, nil, corev1.EventTypeWarning, reason, action, note, args...)
}
