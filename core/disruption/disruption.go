// Package disruption tells whether a node may be disrupted voluntarily now.
//
// A voluntary disruption is one machina starts on its own to change a node
// that is working: an in-place update of a MachineDeployment, a
// MachineConfigPool's update, the replacement of an expired machine. A pod
// or a Node annotated machina.io/do-not-disrupt: "true" holds them (as
// Karpenter's karpenter.sh/do-not-disrupt holds its consolidation, drift and
// expiry; machina honours that key too, so workloads written for Karpenter
// keep their protection). Nothing here holds a remediation: a machine that
// is unhealthy, failed or gone is replaced whatever its pods ask, nor does
// it hold a deletion a user asked for.
package disruption

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The annotations that hold voluntary disruption, on a pod or a Node, when
// their value is "true".
const (
	Annotation          = "machina.io/do-not-disrupt"
	KarpenterAnnotation = "karpenter.sh/do-not-disrupt"
)

// Recheck is how soon a held disruption is looked at again. Pods are not
// watched (a cache of every pod of a cluster would cost the manager more
// than the disruptions it holds), so the removal of a pod or of its
// annotation is seen at the next check; a Node's annotation is seen at once
// by the controllers that watch Nodes.
const Recheck = 30 * time.Second

// Key is the annotation that holds a disruption in annotations, "" when
// none does.
func Key(annotations map[string]string) string {
	for _, k := range []string{Annotation, KarpenterAnnotation} {
		if annotations[k] == "true" {
			return k
		}
	}
	return ""
}

// Hold is why node may not be disrupted voluntarily now, "" when it may:
// the Node's own annotation, or the pods on it that carry one (pods that
// finished or are already terminating hold nothing). pods reads the pods
// of node's cluster straight from its API server, with a field selector on
// spec.nodeName.
func Hold(ctx context.Context, pods client.Reader, node *corev1.Node) (string, error) {
	if k := Key(node.Annotations); k != "" {
		return fmt.Sprintf("node %s has %s=true", node.Name, k), nil
	}
	list := &corev1.PodList{}
	if err := pods.List(ctx, list, client.MatchingFields{"spec.nodeName": node.Name}); err != nil {
		return "", fmt.Errorf("listing the pods of node %s for %s: %w", node.Name, Annotation, err)
	}
	return podsHold(node.Name, list.Items), nil
}

// HoldAll is Hold for many nodes at once, by name: one list of every pod
// of the cluster (in pages) instead of one list per node, which costs less
// once more than a few nodes are asked about (a MachineSet scaling down
// by hundreds). Nodes that may be disrupted are not in the map.
func HoldAll(ctx context.Context, pods client.Reader, nodes []*corev1.Node) (map[string]string, error) {
	held := map[string]string{}
	ask := map[string][]corev1.Pod{}
	for _, n := range nodes {
		if k := Key(n.Annotations); k != "" {
			held[n.Name] = fmt.Sprintf("node %s has %s=true", n.Name, k)
		} else {
			ask[n.Name] = nil
		}
	}
	if len(ask) == 0 {
		return held, nil
	}
	list := &corev1.PodList{}
	for cont := ""; ; cont = list.Continue {
		if err := pods.List(ctx, list, client.Limit(500), client.Continue(cont)); err != nil {
			return nil, fmt.Errorf("listing the pods of %d nodes for %s: %w", len(ask), Annotation, err)
		}
		for _, p := range list.Items {
			if _, ok := ask[p.Spec.NodeName]; ok && Key(p.Annotations) != "" {
				ask[p.Spec.NodeName] = append(ask[p.Spec.NodeName], p)
			}
		}
		if list.Continue == "" {
			break
		}
	}
	for name, ps := range ask {
		if why := podsHold(name, ps); why != "" {
			held[name] = why
		}
	}
	return held, nil
}

// podsHold says which of the pods of node hold it, "" when none does:
// pods that finished or are terminating hold nothing.
func podsHold(node string, pods []corev1.Pod) string {
	var held []string
	key := ""
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if k := Key(p.Annotations); k != "" {
			held = append(held, p.Namespace+"/"+p.Name)
			key = k
		}
	}
	switch len(held) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("pod %s on node %s has %s=true", held[0], node, key)
	}
	sort.Strings(held)
	more := ""
	if len(held) > 3 {
		more = fmt.Sprintf(" and %d more", len(held)-3)
		held = held[:3]
	}
	return fmt.Sprintf("pods %v%s on node %s have %s=true", held, more, node, key)
}

// PreUpdateHookPrefix starts the annotations that gate an in-place update
// of one node: pre-update.hook.machina.io/<owner>, on the Machine (a
// MachineDeployment's in-place update) or on the Node (that and a
// MachineConfigPool's update). Like Cluster API's deletion hooks, an
// operator's controller puts one on, watches for the node to become a
// candidate (the candidate-for-update label, or a pool's new target), does
// what must come before (move data, warn users) and takes its hook off; the
// update starts only once no hook is left. The value is free, for the owner.
const PreUpdateHookPrefix = "pre-update.hook.machina.io/"

// PreUpdateHooks are the pre-update hooks among annotations, sorted.
func PreUpdateHooks(annotations map[string]string) []string {
	var out []string
	for k := range annotations {
		if strings.HasPrefix(k, PreUpdateHookPrefix) && len(k) > len(PreUpdateHookPrefix) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// UpdateHold is why an in-place update may not start on node now, "" when
// it may: a pre-update hook on the node or on its machine (nil when there
// is none), else Hold.
func UpdateHold(ctx context.Context, pods client.Reader, node *corev1.Node, machine client.Object) (string, error) {
	if hooks := PreUpdateHooks(node.Annotations); len(hooks) > 0 {
		return fmt.Sprintf("node %s waits for its pre-update hook(s) %v", node.Name, hooks), nil
	}
	if machine != nil {
		if hooks := PreUpdateHooks(machine.GetAnnotations()); len(hooks) > 0 {
			return fmt.Sprintf("machine %s waits for its pre-update hook(s) %v", machine.GetName(), hooks), nil
		}
	}
	return Hold(ctx, pods, node)
}

// Pick takes, in order, the first n candidates that hold says nothing
// against, and says why each candidate it passed over waits. It asks hold
// only about a candidate it may take, so a rollout with a budget of one
// looks at one node's pods, not at every node's.
func Pick[T any](candidates []T, hold func(T) (string, error), n int32) (picked []T, held []string, err error) {
	for _, c := range candidates {
		if int32(len(picked)) >= n {
			break
		}
		why, err := hold(c)
		if err != nil {
			return nil, nil, err
		}
		if why != "" {
			held = append(held, why)
			continue
		}
		picked = append(picked, c)
	}
	return picked, held, nil
}
