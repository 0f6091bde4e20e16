package machine

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/internal/controller/setup"
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
	if node != nil {
		// The cached Node, unless this controller wrote the Node since and
		// the cache does not show that write yet (writeNode); then it is
		// read from the API server. A decision taken from the older copy
		// would take the node a step back: a Node given the go signal
		// (ReadyForUpdate) whose cache still shows it a candidate would be
		// marked SelectedForUpdate again, and its agent, waiting for the go
		// signal, never update it; a Node just released from preservation
		// would be preserved again.
		fresh, err := setup.ReadFresh(ctx, &r.nodesWritten, r.TargetReader, node)
		if err != nil {
			return nil, fmt.Errorf("reading node %s: %w", name, err)
		}
		node = fresh
	}
	s.node, s.nodeLoaded = node, true
	return node, nil
}

// writeNode writes the difference from before to after to the Machine's
// Node (setup.Patcher with opts); after ends up as the API server answered.
// Every Node write of the controller goes through it, so that loadNode reads
// the Node live until the cache shows the write (rememberNodeWrite).
func (r *Reconciler) writeNode(ctx context.Context, before, after *corev1.Node, opts ...setup.PatchOption) error {
	if err := setup.NewPatcher(r.Target, before, opts...).Patch(ctx, after); err != nil {
		return err
	}
	if after.ResourceVersion != before.ResourceVersion {
		r.rememberNodeWrite(after)
	}
	return nil
}

// rememberNodeWrite records the version of a Node this controller wrote,
// the API server's answer, until the cache shows it.
func (r *Reconciler) rememberNodeWrite(n *corev1.Node) {
	r.nodesWritten.Record(n.UID, n.ResourceVersion, struct{}{}, time.Now())
}
