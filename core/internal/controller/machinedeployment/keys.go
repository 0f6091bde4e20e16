package machinedeployment

import v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"

// Well-known keys this controller reads and writes. They are MCM's (which are
// mostly Kubernetes Deployment's), so that MCM clients and habits keep working;
// most values live in the API package.
const (
	// FinalizerName keeps a MachineDeployment until its machine sets are gone.
	FinalizerName = v1alpha1.MachineFinalizer

	// LabelTemplateHash is set on the machine sets of a deployment and their
	// machines; its value is the hash of the template they were created from,
	// and it keeps the selectors of sibling machine sets apart.
	LabelTemplateHash = v1alpha1.DefaultMachineDeploymentUniqueLabelKey

	// AnnotationRevision numbers the templates of a deployment; the machine
	// set of the current template carries the highest, and the deployment a
	// copy of it.
	AnnotationRevision = v1alpha1.RevisionAnnotation
	// AnnotationRevisionHistory lists the earlier revisions a machine set served
	// (when a rollback made an old template current again).
	AnnotationRevisionHistory = "deployment.kubernetes.io/revision-history"
	// AnnotationDesiredReplicas records on a machine set the deployment's
	// replicas when the set was last scaled, to tell scaling events from
	// rollout steps.
	AnnotationDesiredReplicas = v1alpha1.DesiredReplicasAnnotation
	// AnnotationMaxReplicas records replicas+maxSurge of the deployment when the
	// set was last scaled; proportional scaling divides by it.
	AnnotationMaxReplicas = v1alpha1.MaxReplicasAnnotation

	// AnnotationTriggerDeletion lists, on a MachineDeployment, the machines the
	// cluster-autoscaler wants deleted: "m1~2026-01-01T00:00:00Z,m2~..." or
	// plain "m1,m2", written together with a replica decrement.
	AnnotationTriggerDeletion = v1alpha1.TriggerDeletionByMCMAnnotation
	// AnnotationMachinePriority orders machines for scale-down; "1" is first.
	AnnotationMachinePriority = v1alpha1.MachinePriorityAnnotation
	// AnnotationMarkedForDeletionTime (RFC 3339) says when a machine was chosen
	// for deletion.
	AnnotationMarkedForDeletionTime = v1alpha1.MarkedForDeletionTimeAnnotation
	// AnnotationLastReplicaChangeByScaler is written by the cluster-autoscaler
	// provider; it is not copied to machine sets.
	AnnotationLastReplicaChangeByScaler = v1alpha1.LastReplicaChangeByScalerTimeAnnotation

	// TaintPreferNoSchedule is put on the nodes of old machine sets during a
	// rolling update, so that the scheduler prefers the new nodes.
	TaintPreferNoSchedule = v1alpha1.PreferNoScheduleTaintKey
	// AnnotationScaleDownDisabled tells the cluster-autoscaler not to remove a
	// node; set on every node of a deployment during a rollout.
	AnnotationScaleDownDisabled = v1alpha1.ClusterAutoscalerScaleDownDisabledAnnotation
	// AnnotationScaleDownDisabledByMCM marks AnnotationScaleDownDisabled as
	// ours, so that we remove only what we set, never a user's annotation.
	AnnotationScaleDownDisabledByMCM = v1alpha1.ClusterAutoscalerScaleDownDisabledByMCMAnnotation

	// LabelNode on a machine names its node.
	LabelNode = v1alpha1.NodeLabelKey
	// AnnotationLastApplied is kubectl's; it is not copied to machine sets.
	AnnotationLastApplied = "kubectl.kubernetes.io/last-applied-configuration"
)

// Condition reasons, Kubernetes Deployment's with MachineSet in place of
// ReplicaSet, as MCM has them.
const (
	ReasonNewMachineSetCreated       = "NewMachineSetCreated"
	ReasonFailedMachineSetCreate     = "FailedMachineSetCreate"
	ReasonFoundNewMachineSet         = "FoundNewMachineSet"
	ReasonMachineSetUpdated          = "MachineSetUpdated"
	ReasonNewMachineSetAvailable     = "NewMachineSetAvailable"
	ReasonProgressDeadlineExceeded   = "ProgressDeadlineExceeded"
	ReasonDeploymentPaused           = "DeploymentPaused"
	ReasonDeploymentResumed          = "DeploymentResumed"
	ReasonMinimumReplicasAvailable   = "MinimumReplicasAvailable"
	ReasonMinimumReplicasUnavailable = "MinimumReplicasUnavailable"
	// ReasonInvalidStrategy (Progressing, False) is machina's: the strategy
	// cannot be acted on (an unsupported type, or maxSurge or maxUnavailable
	// out of range); the message says which value and why.
	ReasonInvalidStrategy = "InvalidStrategy"
)

// annotationsNotCopied are the deployment annotations a machine set does not
// inherit: they describe the deployment itself or carry protocol state.
var annotationsNotCopied = map[string]bool{
	AnnotationLastApplied:               true,
	AnnotationRevision:                  true,
	AnnotationRevisionHistory:           true,
	AnnotationDesiredReplicas:           true,
	AnnotationMaxReplicas:               true,
	AnnotationTriggerDeletion:           true,
	AnnotationLastReplicaChangeByScaler: true,
	"deprecated.deployment.rollback.to": true,
}
