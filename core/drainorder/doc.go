// Package drainorder is which pods a drain of a Node removes, and in which
// order. The core's drain (core/internal/drain) runs it; kubectl-machina's
// "drain --dry-run" shows it. One exported package keeps the dry run and the
// drain in agreement.
//
// The pods are chosen by kubectl's drain filters (k8s.io/kubectl/pkg/drain)
// as configured by Filters: DaemonSet pods are left alone, mirror pods are
// skipped, pods without a controller and pods with local storage are
// removed. Pods without a PersistentVolumeClaim are evicted together in the
// first pass; pods with claims follow one at a time (Serial), in SortSerial's
// order, each after the volumes of the previous one have detached.
package drainorder
