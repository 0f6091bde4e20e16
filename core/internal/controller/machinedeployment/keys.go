package machinedeployment

// Well-known keys this controller reads and writes. They are MCM's (which are
// mostly Kubernetes Deployment's), so that MCM clients and habits keep working.
const (
	// FinalizerName keeps a MachineDeployment until its machine sets are gone.
	FinalizerName = "machine.sapcloud.io/machine-controller-manager"

	// LabelTemplateHash is set on the machine sets of a deployment and their
	// machines; its value is the hash of the template they were created from,
	// and it keeps the selectors of sibling machine sets apart.
	LabelTemplateHash = "machine-template-hash"

	// AnnotationRevision numbers the templates of a deployment; the machine
	// set of the current template carries the highest, and the deployment a
	// copy of it.
	AnnotationRevision = "deployment.kubernetes.io/revision"
	// AnnotationRevisionHistory lists the earlier revisions a machine set served
	// (when a rollback made an old template current again).
	AnnotationRevisionHistory = "deployment.kubernetes.io/revision-history"
	// AnnotationDesiredReplicas records on a machine set the deployment's
	// replicas when the set was last scaled, to tell scaling events from
	// rollout steps.
	AnnotationDesiredReplicas = "deployment.kubernetes.io/desired-replicas"
	// AnnotationMaxReplicas records replicas+maxSurge of the deployment when the
	// set was last scaled; proportional scaling divides by it.
	AnnotationMaxReplicas = "deployment.kubernetes.io/max-replicas"

	// AnnotationTriggerDeletion lists, on a MachineDeployment, the machines the
	// cluster-autoscaler wants deleted: "m1~2026-01-01T00:00:00Z,m2~..." or
	// plain "m1,m2", written together with a replica decrement.
	AnnotationTriggerDeletion = "node.machine.sapcloud.io/trigger-deletion-by-mcm"
	// AnnotationMachinePriority orders machines for scale-down; "1" is first.
	AnnotationMachinePriority = "machinepriority.machine.sapcloud.io"
	// AnnotationMarkedForDeletionTime (RFC 3339) says when a machine was chosen
	// for deletion.
	AnnotationMarkedForDeletionTime = "machine.sapcloud.io/marked-for-deletion-time"
	// AnnotationLastReplicaChangeByScaler is written by the cluster-autoscaler
	// provider; it is not copied to machine sets.
	AnnotationLastReplicaChangeByScaler = "machine.sapcloud.io/last-deployment-replica-change-by-scaler-time"

	// TaintPreferNoSchedule is put on the nodes of old machine sets during a
	// rolling update, so that the scheduler prefers the new nodes.
	TaintPreferNoSchedule = "deployment.machine.sapcloud.io/prefer-no-schedule"
	// AnnotationScaleDownDisabled tells the cluster-autoscaler not to remove a
	// node; set on every node of a deployment during a rollout.
	AnnotationScaleDownDisabled = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
	// AnnotationScaleDownDisabledByMCM marks AnnotationScaleDownDisabled as
	// ours, so that we remove only what we set, never a user's annotation.
	AnnotationScaleDownDisabledByMCM = "cluster-autoscaler.kubernetes.io/scale-down-disabled-by-mcm"

	// LabelNode on a machine names its node.
	LabelNode = "node"
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
