package virtualnode

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// startCluster finds the Nodes a cluster has already, so that a restarted
// driver keeps beating them: with WatchNodes through an informer, which
// also serves beats from its cache and reacts to AnnotationSimulate; else
// with one list.
func (k *kubelets) startCluster(ctx context.Context, c *clusterNodes) {
	if k.watch {
		k.watchNodes(ctx, c)
		return
	}
	go k.listNodes(ctx, c.cl)
}

// listNodes schedules the driver's Nodes of a cluster, retrying the list
// until it succeeds or ctx is done.
func (k *kubelets) listNodes(ctx context.Context, cl *cluster) {
	backoff := time.Second
	for {
		list, err := cl.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: LabelClass})
		if err == nil {
			for i := range list.Items {
				k.found(cl, &list.Items[i])
			}
			return
		}
		if ctx.Err() != nil {
			return
		}
		k.log.Warn("listing virtual nodes failed; retrying", "retryIn", backoff, "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, k.interval)
	}
}

// watchNodes starts an informer on the driver's Nodes of a cluster. Its
// initial list schedules the Nodes there are; a change of AnnotationSimulate
// makes the Node's beat due at once; every change is shown to the in-place
// update simulation; its store replaces the GET of a beat.
func (k *kubelets) watchNodes(ctx context.Context, c *clusterNodes) {
	factory := informers.NewSharedInformerFactoryWithOptions(c.cl.client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = LabelClass }))
	informer := factory.Core().V1().Nodes().Informer()
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if node, ok := obj.(*corev1.Node); ok {
				k.found(c.cl, node)
				k.updates.observe(c.cl, node)
				k.configs.observe(c.cl, node)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			oldNode, ok1 := oldObj.(*corev1.Node)
			newNode, ok2 := newObj.(*corev1.Node)
			if ok1 && ok2 && oldNode.Annotations[AnnotationSimulate] != newNode.Annotations[AnnotationSimulate] {
				k.trigger(c.cl, newNode.Name)
			}
			if ok2 {
				k.updates.observe(c.cl, newNode)
				k.configs.observe(c.cl, newNode)
			}
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if node, ok := obj.(*corev1.Node); ok {
				k.forget(nodeKey{c.cl.key, node.Name})
			}
		},
	})
	if err != nil {
		k.log.Error("watching virtual nodes failed; listing them once instead", "error", err)
		go k.listNodes(ctx, c.cl)
		return
	}
	// A Node missing from the store (not seen yet) is read with a GET, so
	// the store serves beats before it has synced as well.
	k.mu.Lock()
	c.cache = informer.GetStore()
	k.mu.Unlock()
	factory.Start(ctx.Done())
}
