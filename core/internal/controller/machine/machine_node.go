package machine

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// loadNode reads the Machine's Node from the target cluster's cache, once
// per reconcile. It leaves s.node nil when the machine has no node name or
// the Node does not exist.
func (r *Reconciler) loadNode(ctx context.Context, s *scope) (*corev1.Node, error) {
	if s.nodeLoaded {
		return s.node, nil
	}
	name := s.nodeName()
	if r.Target == nil || name == "" {
		s.nodeLoaded = true
		return nil, nil
	}
	node := &corev1.Node{}
	if err := r.Target.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading node %s: %w", name, err)
		}
		node = nil
	}
	s.node, s.nodeLoaded = node, true
	return node, nil
}
