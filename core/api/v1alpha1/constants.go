package v1alpha1

import corev1 "k8s.io/api/core/v1"

// Finalizers. They are MCM's, so MCM and machina recognise each other's objects.
const (
	// MachineFinalizer is put on Machines, MachineClasses, MachineSets and
	// MachineDeployments while the controller still has work to do for them.
	MachineFinalizer = "machine.sapcloud.io/machine-controller-manager"
	// SecretFinalizer is put on Secrets referenced by a MachineClass.
	SecretFinalizer = "machine.sapcloud.io/machine-controller"
	// NodeFinalizer is put on Nodes of machines, so that deleting a Node
	// deletes its Machine first.
	NodeFinalizer = "node.machine.sapcloud.io/machine-controller"
)

// Labels on Machines, MachineSets and MachineDeployments.
const (
	// NodeLabelKey is the Machine label whose value is the machine's Node name.
	NodeLabelKey = "node"
	// MachineDeploymentNameLabel is the Machine label whose value is the name of
	// the owning MachineDeployment.
	MachineDeploymentNameLabel = "name"
	// DefaultMachineDeploymentUniqueLabelKey is the label a MachineDeployment
	// adds to its MachineSets' selectors and machines to tell template
	// revisions apart.
	DefaultMachineDeploymentUniqueLabelKey = "machine-template-hash"
	// ForceDeletionLabel, set to ForceDeletionValue on a Machine, skips the
	// graceful drain.
	ForceDeletionLabel = "force-deletion"
	// ForceDeletionValue is the value of ForceDeletionLabel that forces deletion.
	ForceDeletionValue = "True"
	// FreezeLabel, set to FreezeValue on a MachineSet or MachineDeployment,
	// means the safety controller froze it.
	FreezeLabel = "freeze"
	// FreezeValue is the value of FreezeLabel on a frozen object.
	FreezeValue = "True"
	// LabelKeyMachineSetScaleUpDisabled is put on old MachineSets during an
	// in-place update to keep them from scaling up.
	LabelKeyMachineSetScaleUpDisabled = "node.machine.sapcloud.io/scale-up-disabled"
)

// Annotations on Machines.
const (
	// MachinePriorityAnnotation is a Machine's deletion priority on scale-down:
	// lower values are deleted first.
	MachinePriorityAnnotation = "machinepriority.machine.sapcloud.io"
	// DefaultMachinePriority is the priority of a machine without the annotation.
	DefaultMachinePriority = "3"
	// TriggeredForDeletionPriority is the priority of a machine chosen for
	// deletion by the cluster-autoscaler.
	TriggeredForDeletionPriority = "1"
	// MarkedForDeletionTimeAnnotation (RFC 3339) is when the machine was chosen
	// for deletion; it orders machines of equal priority.
	MarkedForDeletionTimeAnnotation = "machine.sapcloud.io/marked-for-deletion-time"
	// LastAppliedNodePreserveValueAnnotation records the preserve value last
	// applied to the machine.
	LastAppliedNodePreserveValueAnnotation = "node.machine.sapcloud.io/last-applied-node-preserve-value"
	// MachineJoinDurationAnnotation (a Go duration) is how long the machine took
	// to join the cluster, as MCM records it. machina does not write it: the
	// histogram machina_machine_join_duration_seconds and the join's
	// lastOperation description carry the same, without a write per machine.
	MachineJoinDurationAnnotation = "node.machine.sapcloud.io/machine-join-duration"
	// ClassHashAnnotation is machina's: the hash of the MachineClass contents
	// (provider, provider spec, node template, secret references; never
	// secret values) the machine's VM was created or last updated with.
	// The class update controller compares it with the class's current
	// hash and calls the driver's UpdateMachine when they differ.
	ClassHashAnnotation = "classupdate.machina.io/class-hash"
	// ClassHashNeedsNewVMAnnotation is machina's: the class hash the driver
	// answered "needs a new VM" for, so that it is not asked again; the
	// machine waits for a rollout to replace it.
	ClassHashNeedsNewVMAnnotation = "classupdate.machina.io/needs-new-vm"
)

// Annotations on MachineSets and MachineDeployments.
const (
	// TriggerDeletionByMCMAnnotation is set on a MachineDeployment by the
	// cluster-autoscaler together with a replica decrement; its value lists the
	// machines to delete as "name~RFC3339,name~RFC3339".
	//
	// On a Node, the value "true" asks for that Node's Machine to be deleted
	// (MCM's older node update callback; MCM has since dropped it, machina
	// keeps honouring it for autoscalers and scripts that still set it). The
	// MachineSet replaces the Machine unless its replicas were lowered.
	TriggerDeletionByMCMAnnotation = "node.machine.sapcloud.io/trigger-deletion-by-mcm"
	// LastReplicaChangeByScalerTimeAnnotation is when a scaler last changed the
	// MachineDeployment's replicas.
	LastReplicaChangeByScalerTimeAnnotation = "machine.sapcloud.io/last-deployment-replica-change-by-scaler-time"
	// EffectiveCreationTimeoutAnnotation on a MachineDeployment overrides the
	// template's creationTimeout.
	EffectiveCreationTimeoutAnnotation = "node.machine.sapcloud.io/effective-creation-timeout"
	// UnfreezeAnnotation forces the safety controller to unfreeze the object.
	UnfreezeAnnotation = "safety.machine.sapcloud.io/unfreeze"
	// RevisionAnnotation is the rollout revision of a MachineSet or MachineDeployment.
	RevisionAnnotation = "deployment.kubernetes.io/revision"
	// DesiredReplicasAnnotation is the replicas of the MachineDeployment when a
	// MachineSet was last scaled.
	DesiredReplicasAnnotation = "deployment.kubernetes.io/desired-replicas"
	// MaxReplicasAnnotation is replicas plus maxSurge of the MachineDeployment
	// when a MachineSet was last scaled.
	MaxReplicasAnnotation = "deployment.kubernetes.io/max-replicas"
)

// Preservation: the annotation on a Node or Machine and its values.
const (
	// PreserveAnnotation asks to keep a machine (and its node) instead of
	// replacing it; on a Node it wins over the Machine's.
	PreserveAnnotation = "node.machine.sapcloud.io/preserve"
	// PreserveValueNow preserves the machine at once, in any phase.
	PreserveValueNow = "now"
	// PreserveValueWhenFailed preserves the machine only once it is Failed.
	PreserveValueWhenFailed = "when-failed"
	// PreserveValueFalse stops or opts out of preservation.
	PreserveValueFalse = "false"
	// PreserveValueAutoPreserved is set by the controller on Failed machines it
	// preserves automatically.
	PreserveValueAutoPreserved = "auto-preserved"
)

// Annotations, labels and taints on Nodes.
const (
	// NotManagedByMCMAnnotation (value "1") marks a Node that has no Machine.
	NotManagedByMCMAnnotation = "node.machine.sapcloud.io/not-managed-by-mcm"
	// LastAppliedALTAnnotation records the labels, annotations and taints last
	// applied from the machine's node template, for a three-way merge.
	LastAppliedALTAnnotation = "node.machine.sapcloud.io/last-applied-anno-labels-taints"
	// LastAppliedVirtualCapacityAnnotation records the virtual capacity last
	// patched into the node's status.
	LastAppliedVirtualCapacityAnnotation = "node.machine.sapcloud.io/last-applied-virtual-capacity"
	// PreservedTaintKey is the NoSchedule taint on the node of a preserved
	// Failed machine.
	PreservedTaintKey = "node.machine.sapcloud.io/preserved"
	// CriticalComponentsNotReadyTaintKey is a NoSchedule taint that keeps a
	// machine Pending until it is removed.
	CriticalComponentsNotReadyTaintKey = "node.gardener.cloud/critical-components-not-ready"
	// NodeMachineNameLabel on a Node is the name of its Machine.
	NodeMachineNameLabel = "node.gardener.cloud/machine-name"
	// PreferNoScheduleTaintKey is put (value "True", PreferNoSchedule) on nodes
	// of old MachineSets during a rolling update.
	PreferNoScheduleTaintKey = "deployment.machine.sapcloud.io/prefer-no-schedule"
	// ClusterAutoscalerScaleDownDisabledAnnotation keeps the cluster-autoscaler
	// from scaling a node down.
	ClusterAutoscalerScaleDownDisabledAnnotation = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
	// ClusterAutoscalerScaleDownDisabledByMCMAnnotation records that the
	// controller (not a user) set ClusterAutoscalerScaleDownDisabledAnnotation.
	ClusterAutoscalerScaleDownDisabledByMCMAnnotation = "cluster-autoscaler.kubernetes.io/scale-down-disabled-by-mcm"
)

// In-place update labels and annotations on Nodes.
const (
	// LabelKeyNodeCandidateForUpdate marks a node of an old MachineSet as a
	// candidate for an in-place update.
	LabelKeyNodeCandidateForUpdate = "node.machine.sapcloud.io/candidate-for-update"
	// LabelKeyNodeSelectedForUpdate marks a node selected for an in-place update.
	LabelKeyNodeSelectedForUpdate = "node.machine.sapcloud.io/selected-for-update"
	// LabelKeyNodeUpdateResult is the result of the in-place update, set by the
	// agent that performs it.
	LabelKeyNodeUpdateResult = "node.machine.sapcloud.io/update-result"
	// LabelValueNodeUpdateSuccessful is the LabelKeyNodeUpdateResult of a
	// successful update.
	LabelValueNodeUpdateSuccessful = "successful"
	// LabelValueNodeUpdateFailed is the LabelKeyNodeUpdateResult of a failed update.
	LabelValueNodeUpdateFailed = "failed"
	// AnnotationKeyMachineUpdateFailedReason explains a failed in-place update.
	AnnotationKeyMachineUpdateFailedReason = "node.machine.sapcloud.io/update-failed-reason"
	// AnnotationKeyNodeDesired is machina's: what the node must become, for
	// a MachineDeployment rollout the name of the new MachineSet. The core
	// writes it on every candidate node and removes it at clean-up.
	AnnotationKeyNodeDesired = "inplace.machina.io/desired"
	// AnnotationKeyNodeCurrent is machina's: what the node last applied
	// successfully, written by the agent together with
	// update-result=successful. The core never removes it.
	AnnotationKeyNodeCurrent = "inplace.machina.io/current"
)

// Node condition types and reasons the controller sets on Nodes.
const (
	// NodeInPlaceUpdate is the node condition that tracks an in-place update.
	NodeInPlaceUpdate corev1.NodeConditionType = "InPlaceUpdate"
	// CandidateForUpdate is a NodeInPlaceUpdate reason.
	CandidateForUpdate = "CandidateForUpdate"
	// SelectedForUpdate is a NodeInPlaceUpdate reason.
	SelectedForUpdate = "SelectedForUpdate"
	// ReadyForUpdate is a NodeInPlaceUpdate reason.
	ReadyForUpdate = "ReadyForUpdate"
	// DrainSuccessful is a NodeInPlaceUpdate reason.
	DrainSuccessful = "DrainSuccessful"
	// UpdateSuccessful is a NodeInPlaceUpdate reason.
	UpdateSuccessful = "UpdateSuccessful"
	// UpdateFailed is a NodeInPlaceUpdate reason.
	UpdateFailed = "UpdateFailed"

	// NodePreserved is the node condition of a preserved machine's node.
	NodePreserved corev1.NodeConditionType = "Preserved"
	// PreservedByMCMMessage is the NodePreserved message for automatic preservation.
	PreservedByMCMMessage = "Preserved by MCM."
	// PreservedByUserMessage is the NodePreserved message for preservation a user asked for.
	PreservedByUserMessage = "Preserved by user."
	// PreservationStoppedMessage is the NodePreserved message once preservation ends.
	PreservationStoppedMessage = "Preservation stopped."
	// PreservedNodeDrainSuccessfulMessage is the NodePreserved message after the
	// preserved node was drained.
	PreservedNodeDrainSuccessfulMessage = "Preserved node drained successfully."
	// PreservedNodeDrainUnsuccessfulMessage is the NodePreserved message when the
	// preserved node could not be drained.
	PreservedNodeDrainUnsuccessfulMessage = "Preserved node could not be drained."

	// NodeTerminationCondition is set on a node before it is drained.
	NodeTerminationCondition corev1.NodeConditionType = "Terminating"
	// NodeUnhealthy is a NodeTerminationCondition reason: the machine Failed.
	NodeUnhealthy = "Unhealthy"
	// NodeScaledDown is a NodeTerminationCondition reason: the machine was scaled down.
	NodeScaledDown = "ScaleDown"
)

// Reasons of the Frozen conditions set by the safety controller.
const (
	// OverShootingReplicaCount is the Frozen reason of a MachineSet with far
	// more machines than wanted.
	OverShootingReplicaCount = "OverShootingReplicaCount"
	// MachineDeploymentStateSync is the Frozen reason of a MachineDeployment
	// whose state follows its MachineSets'.
	MachineDeploymentStateSync = "MachineDeploymentStateSync"
)

// Types of the machina conditions in MachineStatus.MachineConditions.
const (
	// MachineConditionDrained reports the drain of the machine's node: True
	// once drained, False while pods remain (the message counts them).
	MachineConditionDrained = "Drained"
	// MachineConditionClassUpdated reports whether the machine's VM matches
	// its MachineClass's current contents: True once UpdateMachine applied
	// them; False with reason NeedsNewVM when the driver cannot apply them
	// to the running VM (a rollout must replace the machine), and with
	// reason UpdateFailed or PreviousClassUnknown otherwise.
	MachineConditionClassUpdated = "ClassUpdated"
	// ClassUpdateReasonNeedsNewVM is the reason of ClassUpdated=False when
	// the driver cannot apply the class's contents to the running VM: the
	// VM drifted from its class, and only a new VM matches it
	// (MachineDeployment spec.disruption.replaceDrifted replaces it).
	ClassUpdateReasonNeedsNewVM = "NeedsNewVM"
	// MachineConditionPreDrainDeleteHookSucceeded (Cluster API's name) is
	// False while pre-drain hooks hold a deletion before its drain, and True
	// from when the last one was removed. Absent when no hook held it.
	MachineConditionPreDrainDeleteHookSucceeded = "PreDrainDeleteHookSucceeded"
	// MachineConditionPreTerminateDeleteHookSucceeded (Cluster API's name) is
	// False while pre-terminate hooks hold a deletion before its VM is
	// deleted, and True from when the last one was removed. Absent when no
	// hook held it.
	MachineConditionPreTerminateDeleteHookSucceeded = "PreTerminateDeleteHookSucceeded"
)

// Deletion hooks: Cluster API's two annotation families on Machines. Each
// annotation "<prefix>/<name>" (its value, by convention, names the owner)
// holds the deletion at its point until the owner removes it: before the
// drain (to remove an etcd member, say), and after the drain, before the VM
// is deleted (to detach storage, close a ticket). docs/disruption.md.
const (
	PreDrainDeleteHookAnnotationPrefix     = "pre-drain.delete.hook.machine.cluster.x-k8s.io"
	PreTerminateDeleteHookAnnotationPrefix = "pre-terminate.delete.hook.machine.cluster.x-k8s.io"
)

// ExcludeNodeDrainingAnnotation (Cluster API's) on a Machine skips the drain
// of its Node when the Machine is deleted: the Node is neither cordoned nor
// drained, and its pods go with the VM.
const ExcludeNodeDrainingAnnotation = "machine.cluster.x-k8s.io/exclude-node-draining"
