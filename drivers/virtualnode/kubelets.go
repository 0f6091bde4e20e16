package virtualnode

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// retryAfter is how soon a beat that failed is tried again (at most the
// heartbeat interval): soon enough that a Node keeps within the 40s grace
// period of the node lifecycle controller, late enough not to hammer an API
// server that is struggling.
const retryAfter = 2 * time.Second

// nodeKey names one Node in one target cluster; it is the work queue's item.
type nodeKey struct {
	cluster string // cluster.key
	name    string
}

// clusterNodes is what the kubelets know of one target cluster.
type clusterNodes struct {
	cl *cluster
	// cache holds the driver's Nodes of the cluster when WatchNodes is on
	// (the informer's store); nil otherwise.
	cache cache.Store
}

// kubelets is the simulated kubelet of every Node of the driver. Each Node
// has its own schedule in a delaying work queue, and a fixed pool of workers
// beats the Nodes whose time has come: a Node at the end of its boot, then
// every interval, and at once when asked to (AnnotationSimulate changed). A
// thousand Nodes thus cost a thousand beats per interval, spread over it,
// not one beat of every Node whenever one of them finishes booting.
type kubelets struct {
	interval time.Duration
	workers  int
	watch    bool
	log      *slog.Logger

	mu       sync.Mutex
	ctx      context.Context                           // of run; nil before
	queue    workqueue.TypedDelayingInterface[nodeKey] // nil before run
	early    map[nodeKey]time.Time                     // beats asked for before run, when due
	known    map[nodeKey]bool                          // Nodes in the schedule
	clusters map[string]*clusterNodes                  // by cluster key
	leases   map[nodeKey]types.UID                     // Node UID whose Lease is known to exist

	// updates plays the node agent of Nodes whose class asks for it.
	updates *inPlaceSim
	configs *machineConfigSim
}

func newKubelets(opts Options) *kubelets {
	return &kubelets{
		interval: opts.HeartbeatInterval,
		workers:  opts.Workers,
		watch:    opts.WatchNodes,
		log:      opts.Logger,
		early:    map[nodeKey]time.Time{},
		known:    map[nodeKey]bool{},
		clusters: map[string]*clusterNodes{},
		leases:   map[nodeKey]types.UID{},
		updates:  newInPlaceSim(opts.Logger),
		configs:  newMachineConfigSim(opts.Logger),
	}
}

// addCluster adds a cluster whose Nodes get heartbeats: the Nodes it has
// already are found by a list or the informer, once run has started.
func (k *kubelets) addCluster(cl *cluster) {
	c := &clusterNodes{cl: cl}
	k.mu.Lock()
	k.clusters[cl.key] = c
	ctx := k.ctx
	k.mu.Unlock()
	if ctx != nil {
		k.startCluster(ctx, c)
	}
}

// run beats Nodes until ctx is done, then waits for the beats in flight.
func (k *kubelets) run(ctx context.Context) error {
	queue := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[nodeKey]{})
	k.mu.Lock()
	if k.queue != nil {
		k.mu.Unlock()
		queue.ShutDown()
		return errors.New("virtualnode: Run was called twice")
	}
	k.ctx, k.queue = ctx, queue
	k.updates.start(ctx)
	k.configs.start(ctx)
	for key, due := range k.early {
		queue.AddAfter(key, time.Until(due))
	}
	k.early = nil
	clusters := slices.Collect(maps.Values(k.clusters))
	k.mu.Unlock()

	for _, c := range clusters {
		k.startCluster(ctx, c)
	}
	var wg sync.WaitGroup
	for range k.workers {
		wg.Go(func() { k.work(ctx, queue) })
	}
	<-ctx.Done()
	queue.ShutDown()
	wg.Wait()
	return nil
}

// work beats the Nodes the queue hands out, and schedules each one's next
// beat, until the queue shuts down.
func (k *kubelets) work(ctx context.Context, queue workqueue.TypedDelayingInterface[nodeKey]) {
	for {
		key, shutdown := queue.Get()
		if shutdown {
			return
		}
		next, keep := k.beat(ctx, key)
		queue.Done(key)
		if keep {
			queue.AddAfter(key, next)
		}
	}
}

// created schedules the first beat of a Node the driver has just created.
// The Node was created with its conditions, so the first beat is due when
// its boot ends (it then creates the Lease), not right now.
func (k *kubelets) created(cl *cluster, node *corev1.Node) {
	key := nodeKey{cl.key, node.Name}
	k.mu.Lock()
	k.known[key] = true
	k.mu.Unlock()
	k.scheduleAfter(key, k.firstBeat(node, time.Now(), false))
}

// found schedules the first beat of a Node that the list or the informer
// found in the cluster, unless it is in the schedule already: at the end of
// its boot, or at a random point of the interval (the Nodes a restarted
// driver finds, so that a thousand of them do not all beat at once).
func (k *kubelets) found(cl *cluster, node *corev1.Node) {
	if node.DeletionTimestamp != nil || node.Annotations[AnnotationMachine] == "" {
		return // a deleted VM's kubelet is gone; a foreign Node is not ours
	}
	key := nodeKey{cl.key, node.Name}
	k.mu.Lock()
	known := k.known[key]
	k.known[key] = true
	k.mu.Unlock()
	if !known {
		k.scheduleAfter(key, k.firstBeat(node, time.Now(), true))
	}
}

// trigger asks for a beat of one Node at once.
func (k *kubelets) trigger(cl *cluster, name string) {
	k.scheduleAfter(nodeKey{cl.key, name}, 0)
}

// forget drops what the kubelets remember of a Node that is gone; its
// entry in the queue, if any, finds it gone and ends there.
func (k *kubelets) forget(key nodeKey) {
	k.mu.Lock()
	delete(k.known, key)
	delete(k.leases, key)
	k.mu.Unlock()
	k.updates.forget(key)
	k.configs.forget(key)
}

// firstBeat returns when a Node the schedule does not know yet is due: at
// the end of its boot (at most an interval away, a booting Node needs
// heartbeats too); a booted one at once, or, with spread, at a random point
// of the interval.
func (k *kubelets) firstBeat(node *corev1.Node, now time.Time, spread bool) time.Duration {
	if ready := readyAfter(node); ready.After(now) {
		return min(ready.Sub(now), k.interval)
	}
	if spread {
		return rand.N(k.interval)
	}
	return 0
}

// nextBeat returns when a Node that has just been beaten is due again: an
// interval later, or at the end of its boot if that comes first.
func (k *kubelets) nextBeat(node *corev1.Node, now time.Time) time.Duration {
	if ready := readyAfter(node); ready.After(now) {
		return min(ready.Sub(now), k.interval)
	}
	return k.interval
}

// scheduleAfter puts a Node's beat on the queue, d from now. The queue keeps
// one entry per Node, the earliest, so a Node is never beaten twice for one
// due time.
func (k *kubelets) scheduleAfter(key nodeKey, d time.Duration) {
	k.mu.Lock()
	queue := k.queue
	if queue == nil {
		due := time.Now().Add(d)
		if old, ok := k.early[key]; !ok || due.Before(old) {
			k.early[key] = due
		}
	}
	k.mu.Unlock()
	if queue != nil {
		queue.AddAfter(key, d)
	}
}
