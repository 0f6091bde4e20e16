package orphan_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/controllertest"
	"github.com/machina-io/machina/core/internal/controller/safety/orphan"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/internal/driver"
	"github.com/machina-io/machina/core/testenv"
	"github.com/machina-io/machina/drivers/inmemory"
	"github.com/machina-io/machina/drivers/inmemory/inmemorytest"
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// fixture is one namespace with a MachineClass and a fresh inmemory driver.
type fixture struct {
	t     *testing.T
	c     client.Client // direct to the API server
	ns    string
	class *v1alpha1.MachineClass
	drv   servedDriver
	reg   *prometheus.Registry
}

// servedDriver is an inmemory driver on a Unix socket and the core's client
// connected to it.
type servedDriver struct {
	// VMs is the driver itself: tests create and inspect VMs on it directly
	// and inject faults.
	VMs *inmemory.Driver
	// Client is the core's driver client, as the collector uses it.
	Client *driver.Client
}

func newFixture(t *testing.T, env *testenv.Env, opts inmemory.Options) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{t: t, c: env.Client, reg: prometheus.NewRegistry()}
	f.ns = controllertest.Namespace(t, env.Client, "orphan")
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "creds"},
		Data:       map[string][]byte{"token": []byte("s3cr3t-token"), "userData": []byte("#!/bin/sh")},
	}
	require.NoError(t, env.Client.Create(ctx, secret))
	f.class = &v1alpha1.MachineClass{
		ObjectMeta:   metav1.ObjectMeta{Namespace: f.ns, Name: "small"},
		ProviderSpec: runtime.RawExtension{Raw: []byte(`{"size":"small"}`)},
		SecretRef:    &corev1.SecretReference{Name: "creds"},
	}
	require.NoError(t, env.Client.Create(ctx, f.class))
	vms, endpoint := inmemorytest.Serve(t, opts)
	f.drv = servedDriver{VMs: vms, Client: controllertest.ConnectDriver(t, endpoint)}
	return f
}

func (f *fixture) classMessage() *driverv1alpha1.MachineClass {
	return &driverv1alpha1.MachineClass{Name: f.class.Name, Namespace: f.ns, ProviderSpec: f.class.ProviderSpec.Raw}
}

// vm creates a VM for machine name directly at the driver and returns its
// provider ID.
func (f *fixture) vm(name string) string {
	f.t.Helper()
	resp, err := f.drv.VMs.CreateMachine(context.Background(), &driverv1alpha1.CreateMachineRequest{
		Machine:      &driverv1alpha1.Machine{Name: name, Namespace: f.ns},
		MachineClass: f.classMessage(),
	})
	require.NoError(f.t, err)
	return resp.GetProviderId()
}

// machine creates a Machine of the class with the given provider ID and
// phase.
func (f *fixture) machine(name, providerID string, phase v1alpha1.MachinePhase) *v1alpha1.Machine {
	f.t.Helper()
	ctx := context.Background()
	m := &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name},
		Spec:       v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Kind: "MachineClass", Name: f.class.Name}, ProviderID: providerID},
	}
	require.NoError(f.t, f.c.Create(ctx, m))
	if phase != "" {
		m.Status.CurrentStatus.Phase = phase
		m.Status.CurrentStatus.LastUpdateTime = metav1.Now()
		require.NoError(f.t, f.c.Status().Update(ctx, m))
	}
	return m
}

// liveMachine creates a VM and a Running Machine that owns it.
func (f *fixture) liveMachine(name string) string {
	id := f.vm(name)
	f.machine(name, id, v1alpha1.MachineRunning)
	return id
}

// vmNames returns the names of the VMs the driver has, sorted.
func (f *fixture) vmNames() []string {
	var names []string
	for _, vm := range f.drv.VMs.VMs() {
		names = append(names, vm.Name)
	}
	return names
}

func (f *fixture) hasVM(name string) bool { return slices.Contains(f.vmNames(), name) }

func (f *fixture) deleteCalls() int { return f.drv.VMs.Calls(inmemory.MethodDeleteMachine) }

// collector returns a collector over mgr's cache for the fixture's
// namespace; apiReader nil means mgr's.
func (f *fixture) collector(mgr ctrl.Manager, apiReader client.Reader) *orphan.Collector {
	if apiReader == nil {
		apiReader = mgr.GetAPIReader()
	}
	return &orphan.Collector{
		Driver:     f.drv.Client,
		Client:     mgr.GetClient(),
		APIReader:  apiReader,
		Cache:      mgr.GetCache(),
		Recorder:   setup.Recorder(mgr, orphan.Name),
		Namespace:  f.ns,
		Registerer: f.reg,
	}
}

// waitCached waits until mgr's cache holds the class and n Machines in the
// namespace.
func (f *fixture) waitCached(mgr ctrl.Manager, n int) {
	f.t.Helper()
	require.Eventually(f.t, func() bool {
		ctx := context.Background()
		classes, machines := &v1alpha1.MachineClassList{}, &v1alpha1.MachineList{}
		return mgr.GetClient().List(ctx, classes, client.InNamespace(f.ns)) == nil && len(classes.Items) == 1 &&
			mgr.GetClient().List(ctx, machines, client.InNamespace(f.ns)) == nil && len(machines.Items) == n
	}, controllertest.WaitFor, controllertest.Tick)
}

// orphanEvents returns the notes of the OrphanVMDeleted events on the class.
func (f *fixture) orphanEvents() []string {
	list := &corev1.EventList{}
	require.NoError(f.t, f.c.List(context.Background(), list, client.InNamespace(f.ns)))
	var notes []string
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == "MachineClass" && e.InvolvedObject.Name == f.class.Name && e.Reason == orphan.ReasonOrphanVMDeleted {
			notes = append(notes, e.Message)
		}
	}
	return notes
}

// deletedMetric returns machina_orphan_vms_deleted_total of the class.
func (f *fixture) deletedMetric() float64 {
	f.t.Helper()
	families, err := f.reg.Gather()
	require.NoError(f.t, err)
	for _, fam := range families {
		if fam.GetName() != "machina_orphan_vms_deleted_total" {
			continue
		}
		for _, m := range fam.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "class" && l.GetValue() == f.ns+"/"+f.class.Name {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// scans records the results of a running collector's scans.
type scans struct {
	mu      sync.Mutex
	results []orphan.Result
	// probe, when set, runs after each scan in the collector's goroutine
	// and its answer is recorded with the result.
	probe  func() string
	probes []string
}

func (s *scans) observe(r orphan.Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.results = append(s.results, r)
	if s.probe != nil {
		s.probes = append(s.probes, s.probe())
	}
}

func (s *scans) snapshot() ([]orphan.Result, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.results), slices.Clone(s.probes)
}

func (s *scans) count(pred func(orphan.Result) bool) int {
	results, _ := s.snapshot()
	n := 0
	for _, r := range results {
		if pred(r) {
			n++
		}
	}
	return n
}

func succeeded(r orphan.Result) bool { return r.Err == nil }
func aborted(r orphan.Result) bool   { return r.Err != nil }
func every(orphan.Result) bool       { return true }

// requireNever fails when cond becomes true within d, polling; it is how a
// test shows that something does not happen.
func requireNever(t *testing.T, cond func() bool, d time.Duration, msg string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			t.Fatalf(msg, args...)
		}
		time.Sleep(controllertest.Tick)
	}
}

func describe(rs []orphan.Result) string {
	var b strings.Builder
	for i, r := range rs {
		fmt.Fprintf(&b, "#%d classes=%d skipped=%d candidates=%d deleted=%v err=%v\n", i, r.Classes, r.Skipped, r.Candidates, r.Deleted, r.Err)
	}
	return b.String()
}
