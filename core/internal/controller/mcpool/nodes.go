package mcpool

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/machina-io/machina/core/internal/inplace"
)

// zoneLabel orders candidates, as MCO does: zone by zone.
const zoneLabel = corev1.LabelTopologyZone

// poolNode is a member Node of a pool as the handshake shows it.
type poolNode struct {
	node                            *corev1.Node
	desired, current, state, reason string
}

func newPoolNode(n *corev1.Node) poolNode {
	a := n.Annotations
	return poolNode{node: n, desired: a[annDesiredConfig], current: a[annCurrentConfig], state: a[annState], reason: a[annReason]}
}

// updated: the node runs target, and its agent says it is done.
func (p poolNode) updated(target string) bool {
	return target != "" && p.desired == target && p.current == p.desired && p.state == stateDone
}

// degraded: the agent failed (an error, or a configuration it cannot
// apply in place).
func (p poolNode) degraded() bool {
	return p.state == stateDegraded || p.state == stateUnreconcilable
}

// healthy: the Node is Ready, under no disk pressure, its network up, and
// schedulable (a cordoned node is not).
func (p poolNode) healthy() bool {
	if p.node.Spec.Unschedulable {
		return false
	}
	ready := false
	for _, c := range p.node.Status.Conditions {
		switch c.Type {
		case corev1.NodeReady:
			ready = c.Status == corev1.ConditionTrue
		case corev1.NodeDiskPressure, corev1.NodeNetworkUnavailable:
			if c.Status == corev1.ConditionTrue {
				return false
			}
		}
	}
	return ready
}

// busy: the node has a configuration to reach, or its agent is at work.
func (p poolNode) busy() bool {
	return inplace.ConfigUpdating(p.node)
}

// unavailable: not healthy, or busy, while its agent is not failing (a
// failing node counts as degraded instead).
func (p poolNode) unavailable() bool {
	return !p.degraded() && (!p.healthy() || p.busy())
}

// sortCandidates orders nodes as MCO takes them when it cannot take all:
// by zone (nodes without one last), then oldest first, then by name.
func sortCandidates(nodes []poolNode) {
	slices.SortStableFunc(nodes, func(a, b poolNode) int {
		za, hasA := a.node.Labels[zoneLabel]
		zb, hasB := b.node.Labels[zoneLabel]
		switch {
		case hasA != hasB:
			if hasA {
				return -1
			}
			return 1
		case za != zb:
			return cmp.Compare(za, zb)
		}
		if c := a.node.CreationTimestamp.Compare(b.node.CreationTimestamp.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.node.Name, b.node.Name)
	})
}
