package disruption

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// MachineNode reads the Node of machine m (its node label) through nodes;
// nil when m has no node (yet, or any more).
func MachineNode(ctx context.Context, nodes client.Reader, m *v1alpha1.Machine) (*corev1.Node, error) {
	name := m.Labels[v1alpha1.NodeLabelKey]
	if name == "" {
		return nil, nil
	}
	node := &corev1.Node{}
	if err := nodes.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading node %s of machine %s: %w", name, m.Name, err)
	}
	return node, nil
}

// MachineHold is Hold for the Node of machine m, with the machine named:
// "" when it may be disrupted or has no node.
func MachineHold(ctx context.Context, nodes, pods client.Reader, m *v1alpha1.Machine) (string, error) {
	node, err := MachineNode(ctx, nodes, m)
	if err != nil || node == nil {
		return "", err
	}
	why, err := Hold(ctx, pods, node)
	if why != "" {
		why = "machine " + m.Name + ": " + why
	}
	return why, err
}
