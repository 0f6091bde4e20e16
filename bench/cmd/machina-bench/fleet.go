package main

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
	"github.com/machina-io/machina/core/api/v1alpha1"
)

// Names of the objects the scenarios work with.
const (
	benchNamespace = "bench"
	secretName     = "bench-userdata"
	poolLabel      = "machina.io/pool"
)

func benchScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := mcv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return scheme, v1alpha1.AddToScheme(scheme)
}

// createBase creates the namespace, the user-data Secret and the machine
// classes every scenario uses.
func createBase(ctx context.Context, c client.Client, bootDelay time.Duration, classes ...string) error {
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNamespace}},
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: secretName, Namespace: benchNamespace},
			StringData: map[string]string{"userData": "#cloud-config\nhostname: <<MACHINE_NAME>>\nruncmd:\n- kubeadm join --token <<BOOTSTRAP_TOKEN>> api.bench.internal:6443\n"},
		},
	}
	for _, name := range classes {
		objs = append(objs, &v1alpha1.MachineClass{
			ObjectMeta:   metav1.ObjectMeta{Name: name, Namespace: benchNamespace},
			Provider:     "virtualnode",
			ProviderSpec: runtime.RawExtension{Raw: fmt.Appendf(nil, `{"bootDelay":%q,"capacity":{"cpu":"2","memory":"4Gi","pods":"110"}}`, bootDelay)},
			SecretRef:    &corev1.SecretReference{Name: secretName, Namespace: benchNamespace},
		})
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}

// newDeployment returns a MachineDeployment of zero machines of class,
// rolling with maxSurge and maxUnavailable 0.
func newDeployment(name, class string, maxSurge intstr.IntOrString) *v1alpha1.MachineDeployment {
	zero := intstr.FromInt32(0)
	return &v1alpha1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: benchNamespace},
		Spec: v1alpha1.MachineDeploymentSpec{
			Replicas: 0,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{poolLabel: name}},
			Strategy: v1alpha1.MachineDeploymentStrategy{
				Type: v1alpha1.RollingUpdateMachineDeploymentStrategyType,
				RollingUpdate: &v1alpha1.RollingUpdateMachineDeployment{UpdateConfiguration: v1alpha1.UpdateConfiguration{
					MaxSurge: &maxSurge, MaxUnavailable: &zero,
				}},
			},
			Template: v1alpha1.MachineTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{poolLabel: name}},
				Spec: v1alpha1.MachineSpec{
					Class: v1alpha1.ClassSpec{Kind: "MachineClass", Name: class},
				},
			},
		},
	}
}

// patchDeployment applies a JSON merge patch to MachineDeployment name.
func patchDeployment(ctx context.Context, c client.Client, name, patch string) (generation int64, err error) {
	md := &v1alpha1.MachineDeployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: benchNamespace}}
	if err := c.Patch(ctx, md, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return 0, fmt.Errorf("patching MachineDeployment %s: %w", name, err)
	}
	return md.Generation, nil
}

// machineState is what the tracker knows of one Machine.
type machineState struct {
	pool, class string
	phase       v1alpha1.MachinePhase
	// seen is when the tracker first saw the machine; running when it
	// first saw it Running (zero: not yet).
	seen, running time.Time
}

// tracker follows Machines, Nodes and MachineDeployments through informers
// (one list and a watch each), so that waiting for a state costs the API
// server nothing per poll and transitions are timed as they arrive.
type tracker struct {
	cache cache.Cache

	mu       sync.Mutex
	machines map[string]*machineState
	nodes    map[string]bool
	// selected is when each node was first seen selected for an in-place
	// update, and runningAgain when its machine was last seen turning
	// Running from another phase, since the last resetInPlace (slotUse).
	selected, runningAgain map[string]time.Time
	// peakMachines is the most machines that existed at once since the
	// last resetPeak.
	peakMachines int
}

// startTracker starts the informers and waits until they are synced.
func startTracker(ctx context.Context, c *controlPlane, scheme *runtime.Scheme) (*tracker, error) {
	ca, err := cache.New(c.admin, cache.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	t := &tracker{cache: ca, machines: map[string]*machineState{}, nodes: map[string]bool{},
		selected: map[string]time.Time{}, runningAgain: map[string]time.Time{}}
	mi, err := ca.GetInformer(ctx, &v1alpha1.Machine{})
	if err != nil {
		return nil, err
	}
	if _, err := mi.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { t.machineChanged(o) },
		UpdateFunc: func(_, o any) { t.machineChanged(o) },
		DeleteFunc: t.machineDeleted,
	}); err != nil {
		return nil, err
	}
	ni, err := ca.GetInformer(ctx, &corev1.Node{})
	if err != nil {
		return nil, err
	}
	if _, err := ni.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { t.nodeChanged(o, true) },
		UpdateFunc: func(_, o any) { t.nodeChanged(o, true) },
		DeleteFunc: func(o any) { t.nodeChanged(o, false) },
	}); err != nil {
		return nil, err
	}
	if _, err := ca.GetInformer(ctx, &v1alpha1.MachineDeployment{}); err != nil {
		return nil, err
	}
	go func() { _ = ca.Start(ctx) }()
	if !ca.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("the tracker's caches did not sync")
	}
	return t, nil
}

func (t *tracker) machineChanged(o any) {
	m, ok := o.(*v1alpha1.Machine)
	if !ok || m.Namespace != benchNamespace {
		return
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.machines[m.Name]
	if s == nil {
		s = &machineState{seen: now}
		t.machines[m.Name] = s
		t.peakMachines = max(t.peakMachines, len(t.machines))
	}
	was := s.phase
	s.pool, s.class, s.phase = m.Labels[poolLabel], m.Spec.Class.Name, m.Status.CurrentStatus.Phase
	if s.phase == v1alpha1.MachineRunning && s.running.IsZero() {
		s.running = now
	}
	if node := m.Labels[v1alpha1.NodeLabelKey]; node != "" && was != "" && was != v1alpha1.MachineRunning && s.phase == v1alpha1.MachineRunning {
		t.runningAgain[node] = now
	}
}

func (t *tracker) machineDeleted(o any) {
	if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	m, ok := o.(*v1alpha1.Machine)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.machines, m.Name)
}

func (t *tracker) nodeChanged(o any, exists bool) {
	if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	n, ok := o.(*corev1.Node)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if exists {
		t.nodes[n.Name] = true
		if _, seen := t.selected[n.Name]; !seen && n.Labels[v1alpha1.LabelKeyNodeSelectedForUpdate] == "true" {
			t.selected[n.Name] = time.Now()
		}
	} else {
		delete(t.nodes, n.Name)
	}
}

// census is a snapshot of the tracker's view.
type census struct {
	machines, running, nodes int
	// byClass counts the machines of each class, runningByClass the
	// Running ones.
	byClass, runningByClass map[string]int
}

func (t *tracker) census(pool string) census {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := census{nodes: len(t.nodes), byClass: map[string]int{}, runningByClass: map[string]int{}}
	for _, s := range t.machines {
		if pool != "" && s.pool != pool {
			continue
		}
		c.machines++
		c.byClass[s.class]++
		if s.phase == v1alpha1.MachineRunning {
			c.running++
			c.runningByClass[s.class]++
		}
	}
	return c
}

// resetInPlace forgets the selections and returns to Running seen so far:
// an in-place rollout is timed from here.
func (t *tracker) resetInPlace() {
	t.mu.Lock()
	defer t.mu.Unlock()
	clear(t.selected)
	clear(t.runningAgain)
}

// inPlaceTimes returns copies of the selections and returns to Running
// seen since resetInPlace.
func (t *tracker) inPlaceTimes() (selected, runningAgain map[string]time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.selected), maps.Clone(t.runningAgain)
}

// resetPeak starts counting the peak number of machines afresh.
func (t *tracker) resetPeak() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.peakMachines = len(t.machines)
}

func (t *tracker) peak() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.peakMachines
}

// startUps returns, for the machines of class that the tracker saw appear
// after since and that became Running, the time from appearing to Running.
func (t *tracker) startUps(class string, since time.Time) []time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []time.Duration
	for _, s := range t.machines {
		if s.class == class && !s.seen.Before(since) && !s.running.IsZero() {
			out = append(out, s.running.Sub(s.seen))
		}
	}
	return out
}

// deployment returns MachineDeployment name from the cache.
func (t *tracker) deployment(ctx context.Context, name string) (*v1alpha1.MachineDeployment, error) {
	md := &v1alpha1.MachineDeployment{}
	err := t.cache.Get(ctx, client.ObjectKey{Namespace: benchNamespace, Name: name}, md)
	return md, err
}

// waitFor polls done (cheap: it reads the tracker) every 100ms until it
// holds, failing when timeout passes first or a process exits.
func waitFor(ctx context.Context, timeout time.Duration, what string, check func() error, done func() (bool, string)) error {
	start := time.Now()
	deadline := start.Add(timeout)
	lastReport := start
	for {
		ok, state := done()
		if ok {
			return nil
		}
		// A line every 10s shows a long wait is moving.
		if time.Since(lastReport) >= 10*time.Second {
			lastReport = time.Now()
			fmt.Printf("  %3.0fs waiting for %s: %s\n", time.Since(start).Seconds(), what, state)
		}
		if err := check(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not reached within %s: %s (last state: %s)", timeout, what, state)
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}
