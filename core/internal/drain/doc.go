// Package drain empties a Node of its pods before its machine's VM is
// deleted, one non-blocking pass at a time.
//
// A pass cordons the Node, lists its pods (with the pod filters of
// k8s.io/kubectl/pkg/drain: DaemonSet pods are left alone, mirror pods are
// skipped, pods with local storage are removed), asks the Eviction API to
// evict every pod without a PersistentVolumeClaim that is not already
// terminating, and returns how many pods are still on the Node. The caller
// requeues and runs the next pass later, so a drain that waits for a
// PodDisruptionBudget never holds a worker.
//
// The MachineDrainRules of the drained machine (Options.Rules) and the
// pods' drain labels decide, pod by pod, to skip it, to wait for it to
// complete without evicting it, or to evict it in the stage of its order
// (drainorder.Stages): a stage is evicted only once every pod of the stages
// before it is gone. A forced pass deletes the pods it would wait for too,
// and leaves the skipped ones.
//
// Pods with PersistentVolumeClaims are evicted one at a time, highest
// priority first (as MCM), each followed by a wait until the pod is gone and
// its volumes have detached from the Node: no VolumeAttachment of the Node
// for its PersistentVolumes (CSI) and, when the driver maps volumes
// (GetVolumeIDs), none of their provider IDs in node.status.volumesAttached.
// The wait is bounded by the detach timeout, after which the drain goes on.
// A pass does not block on the wait: it returns it (Result.Waiting) for the
// caller to store and hand to the next pass (Options.Wait).
//
// A forced pass deletes the pods with a grace period of zero instead, for
// Nodes that are gone or whose drain took too long; the caller then removes
// the Node's VolumeAttachments (DeleteVolumeAttachments) because nobody is
// left to detach the volumes gracefully.
package drain
