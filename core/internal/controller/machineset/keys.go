package machineset

// Well-known keys this controller reads and writes. They are MCM's, so that
// MCM clients (the cluster-autoscaler's mcm provider, kubectl habits) keep
// working.
const (
	// FinalizerName keeps a MachineSet until its machines are gone.
	FinalizerName = "machine.sapcloud.io/machine-controller-manager"

	// AnnotationMachinePriority orders machines for scale-down; lower goes
	// first, "1" marks a machine the cluster-autoscaler chose.
	AnnotationMachinePriority = "machinepriority.machine.sapcloud.io"

	// AnnotationMarkedForDeletionTime (RFC 3339) says when a machine was chosen
	// for deletion; the earlier mark goes first.
	AnnotationMarkedForDeletionTime = "machine.sapcloud.io/marked-for-deletion-time"

	// AnnotationPreserve asks the machine controller to preserve a machine.
	AnnotationPreserve = "node.machine.sapcloud.io/preserve"

	// LabelFreeze, set to "True" by the safety controller, stops a set from
	// creating machines; deletions continue.
	LabelFreeze = "freeze"

	// LabelDeploymentName carries the name of the MachineDeployment a machine
	// belongs to; the machine controller finds the deployment by it.
	LabelDeploymentName = "name"
)
