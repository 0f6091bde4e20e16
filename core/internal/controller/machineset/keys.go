package machineset

import v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"

// Well-known keys this controller reads and writes. They are MCM's, so that
// MCM clients (the cluster-autoscaler's mcm provider, kubectl habits) keep
// working; the values live in the API package.
const (
	// FinalizerName keeps a MachineSet until its machines are gone.
	FinalizerName = v1alpha1.MachineFinalizer

	// AnnotationMachinePriority orders machines for scale-down; lower goes
	// first, "1" marks a machine the cluster-autoscaler chose.
	AnnotationMachinePriority = v1alpha1.MachinePriorityAnnotation

	// AnnotationMarkedForDeletionTime (RFC 3339) says when a machine was chosen
	// for deletion; the earlier mark goes first.
	AnnotationMarkedForDeletionTime = v1alpha1.MarkedForDeletionTimeAnnotation

	// AnnotationPreserve asks the machine controller to preserve a machine.
	AnnotationPreserve = v1alpha1.PreserveAnnotation

	// LabelFreeze, set to "True" by the safety controller, stops a set from
	// creating machines; deletions continue.
	LabelFreeze = v1alpha1.FreezeLabel

	// LabelDeploymentName carries the name of the MachineDeployment a machine
	// belongs to; the machine controller finds the deployment by it.
	LabelDeploymentName = v1alpha1.MachineDeploymentNameLabel
)
