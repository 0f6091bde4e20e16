package mcgc

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	mcfgv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
)

// referenced tells whether a pool or a Node refers to name. It scans
// them all: rendered configurations are few, and a scan of the cache costs
// less than indexes every term would have to register once.
func (c *Collector) referenced(ctx context.Context, r client.Reader, name string) (bool, error) {
	pools := &mcfgv1.MachineConfigPoolList{}
	if err := r.List(ctx, pools); err != nil {
		return false, fmt.Errorf("listing pools: %w", err)
	}
	for i := range pools.Items {
		if slices.Contains(poolConfigs(&pools.Items[i]), name) {
			return true, nil
		}
	}
	nodes := &corev1.NodeList{}
	if err := r.List(ctx, nodes); err != nil {
		return false, fmt.Errorf("listing Nodes: %w", err)
	}
	for i := range nodes.Items {
		if slices.Contains(nodeConfigs(&nodes.Items[i]), name) {
			return true, nil
		}
	}
	return false, nil
}

// poolConfigs are the rendered configurations a pool refers to.
func poolConfigs(p *mcfgv1.MachineConfigPool) []string {
	return nonEmpty(p.Spec.Configuration.Name, p.Status.Configuration.Name)
}

// nodeConfigs are the rendered configurations a Node refers to.
func nodeConfigs(n *corev1.Node) []string {
	return nonEmpty(n.Annotations[mcfgv1.CurrentConfigAnnotation], n.Annotations[mcfgv1.DesiredConfigAnnotation])
}

func nonEmpty(values ...string) []string {
	var out []string
	for _, v := range values {
		if v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

func requests(names []string) []reconcile.Request {
	out := make([]reconcile.Request, 0, len(names))
	for _, n := range names {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Name: n}})
	}
	return out
}
