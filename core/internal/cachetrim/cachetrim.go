// Package cachetrim holds the transform the manager's informer caches apply
// to every object before storing it: it drops what no controller reads, so
// that a cached object costs less memory and less to copy on every cached
// read. See docs/performance.md.
//
// Dropping a field from the cache is safe only while nothing writes a cached
// object back whole: an Update would send the field empty. machina's
// controllers write Nodes and Machines with patches computed against the
// cached copy (client.MergeFrom, StrategicMergeFrom), which name only the
// fields they change; the Node's status is the kubelet's, written through
// the status subresource by the kubelet only. An Update whose object has no
// managedFields leaves the server's managedFields as they are.
package cachetrim

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"
)

// Transform is a cache transform (cache.Options.DefaultTransform): it drops
// metadata.managedFields from every object and, from Nodes, the status
// fields listed at trimNodeStatus.
func Transform() toolscache.TransformFunc {
	return func(in any) (any, error) {
		if node, ok := in.(*corev1.Node); ok {
			trimNodeStatus(node)
		}
		// A nil check first: setting nil on an object that has none
		// allocates nothing and keeps the transform idempotent
		// (kubernetes/kubernetes#124337).
		if obj, err := meta.Accessor(in); err == nil && obj.GetManagedFields() != nil {
			obj.SetManagedFields(nil)
		}
		return in, nil
	}
}

// trimNodeStatus keeps of a Node's status only what machina reads:
// conditions (health, readiness, the Terminating and in-place conditions),
// capacity and allocatable (virtual capacity, machine_virtualcapacity.go),
// addresses and phase (small, and what a person expects of a cached Node),
// volumesAttached (small; the drain reads it, from the API server today).
// The rest is the kubelet's inventory for the scheduler and for people, and
// by far the larger part of a real Node: the list of container images (up
// to 50 entries with all their tags and digests), nodeInfo, daemonEndpoints,
// volumesInUse, config, runtimeHandlers, features, declaredFeatures. A field
// of the status added in a later Kubernetes is dropped too until it is
// listed here: read a new field live, or keep it here first.
func trimNodeStatus(node *corev1.Node) {
	s := node.Status
	node.Status = corev1.NodeStatus{
		Capacity:        s.Capacity,
		Allocatable:     s.Allocatable,
		Phase:           s.Phase,
		Conditions:      s.Conditions,
		Addresses:       s.Addresses,
		VolumesAttached: s.VolumesAttached,
	}
}
