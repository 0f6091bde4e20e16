// Package drainorder is which pods a drain of a Node removes, and in which
// order. The core's drain (core/internal/drain) runs it; kubectl-machina's
// "drain --dry-run" shows it. One exported package keeps the dry run and the
// drain in agreement.
//
// The pods are chosen by kubectl's drain filters (k8s.io/kubectl/pkg/drain)
// as configured by Filters: DaemonSet pods are left alone, mirror pods are
// skipped, pods without a controller and pods with local storage are
// removed; pods labelled cluster.x-k8s.io/drain=skip (Cluster API's label)
// stay. The pods go in Groups: first those that are not critical, then,
// once they are all gone, the critical ones (system-cluster-critical and
// system-node-critical, Karpenter's order). Within a group, pods without a
// PersistentVolumeClaim are evicted together; pods with claims follow one
// at a time (Serial), in SortSerial's order, each after the volumes of the
// previous one have detached.
package drainorder
