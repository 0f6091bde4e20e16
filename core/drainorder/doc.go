// Package drainorder is which pods a drain of a Node removes, and in which
// order. The core's drain (core/internal/drain) runs it; kubectl-machina's
// "drain --dry-run" shows it. One exported package keeps the dry run and the
// drain in agreement.
//
// The pods are chosen by kubectl's drain filters (k8s.io/kubectl/pkg/drain)
// as configured by Filters: DaemonSet pods are left alone, mirror pods are
// skipped, pods without a controller and pods with local storage are
// removed; pods labelled machina.io/drain=skip or cluster.x-k8s.io/drain=skip
// (Cluster API's label) stay.
//
// Rules (the MachineDrainRules that select the drained Machine,
// ForMachine) then decide for each pod: Skip leaves it, WaitCompleted does
// not evict it but holds the drain until it has completed or is gone, Drain
// evicts it in the group of its order. A drain label on the pod wins over
// the rules (Cluster API's precedence); of several rules that select a pod
// the first by name decides; a pod no rule selects is drained at order 0.
//
// Stages are the steps of the drain: by increasing order, and within an
// order first the pods that are not critical (with the pods waited for, at
// order 0), then the critical ones (system-cluster-critical and
// system-node-critical, Karpenter's order); a stage starts once the previous
// one's pods are all gone. Within a stage, pods without a
// PersistentVolumeClaim are evicted together; pods with claims follow one
// at a time (Serial), in SortSerial's order, each after the volumes of the
// previous one have detached.
package drainorder
