package main

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/testenv"
	"github.com/machina-io/machina/internal/process"
)

// The plugin's tests run every verb in the test process, as a cobra command
// with buffers for its streams, against a real API server (envtest) that
// holds objects the tests create the way the controllers leave them. Output
// is compared with golden files under testdata/; `go test -run TestPlugin
// ./cmd/kubectl-machina/ -update` rewrites them. Ages are stable because
// each test fixes the plugin's clock relative to the objects it created.

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// plugin runs the plugin against one API server.
type plugin struct {
	t   *testing.T
	env *testenv.Env
	c   client.Client
}

func TestPlugin(t *testing.T) {
	env := testenv.Start(t)
	p := &plugin{t: t, env: env, c: env.Client}
	t.Run("tree", p.testTree)
	t.Run("why", p.testWhy)
	t.Run("drain", p.testDrain)
	t.Run("drain rules", p.testDrainRules)
	t.Run("rollout", p.testRollout)
	t.Run("scale-down", p.testScaleDown)
	t.Run("usage errors", p.testUsageErrors)
}

// runAt runs `kubectl machina ARGS` with the clock at now, in namespace ns.
func (p *plugin) runAt(ctx context.Context, now time.Time, ns string, out *process.Buffer, args ...string) error {
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: out}
	cmd := newRootCommandWithClock(streams, func() time.Time { return now })
	cmd.SetArgs(append([]string{"--kubeconfig=" + p.env.Kubeconfig, "--namespace=" + ns}, args...))
	return cmd.ExecuteContext(ctx)
}

// run runs the plugin to its end and returns what it printed.
func (p *plugin) run(t *testing.T, now time.Time, ns string, args ...string) (string, error) {
	t.Helper()
	out := &process.Buffer{}
	err := p.runAt(t.Context(), now, ns, out, args...)
	return out.String(), err
}

// golden compares got with testdata/NAME.golden, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "no golden file; run the test with -update to write it")
	require.Equal(t, string(want), got, "output differs from %s (rerun with -update if the change is intended)", path)
}

// namespace creates a namespace with a fixed name: output names it.
func (p *plugin) namespace(t *testing.T, name string) {
	t.Helper()
	require.NoError(t, p.c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}))
}

// create creates obj and then writes its status, as a controller would.
func (p *plugin) create(t *testing.T, obj client.Object, setStatus func()) {
	t.Helper()
	require.NoError(t, p.c.Create(t.Context(), obj))
	if setStatus != nil {
		setStatus()
		require.NoError(t, p.c.Status().Update(t.Context(), obj))
	}
}

// controlledBy makes owner the controller of obj.
func controlledByRef(obj, owner client.Object, kind string) {
	obj.SetOwnerReferences([]metav1.OwnerReference{{
		APIVersion: v1alpha1.GroupVersion.String(), Kind: kind, Name: owner.GetName(), UID: owner.GetUID(),
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}})
}

func class() v1alpha1.ClassSpec { return v1alpha1.ClassSpec{Kind: "MachineClass", Name: "small"} }

func machineTemplate(labels map[string]string) v1alpha1.MachineTemplateSpec {
	return v1alpha1.MachineTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       v1alpha1.MachineSpec{Class: class()},
	}
}

func (p *plugin) deployment(t *testing.T, ns, name string, replicas int32, status v1alpha1.MachineDeploymentStatus) *v1alpha1.MachineDeployment {
	t.Helper()
	labels := map[string]string{"name": name}
	d := &v1alpha1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.MachineDeploymentSpec{
			Replicas: replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: machineTemplate(labels),
		},
	}
	p.create(t, d, func() {
		status.ObservedGeneration = d.Generation
		d.Status = status
	})
	return d
}

func (p *plugin) machineSet(t *testing.T, d *v1alpha1.MachineDeployment, name string, revision string, replicas int32, status v1alpha1.MachineSetStatus, annotations map[string]string) *v1alpha1.MachineSet {
	t.Helper()
	labels := map[string]string{"name": d.Name, v1alpha1.DefaultMachineDeploymentUniqueLabelKey: name}
	ms := &v1alpha1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: name, Labels: labels, Annotations: map[string]string{v1alpha1.RevisionAnnotation: revision}},
		Spec: v1alpha1.MachineSetSpec{
			Replicas:     replicas,
			Selector:     &metav1.LabelSelector{MatchLabels: labels},
			MachineClass: class(),
			Template:     machineTemplate(labels),
		},
	}
	for k, v := range annotations {
		ms.Annotations[k] = v
	}
	controlledByRef(ms, d, "MachineDeployment")
	p.create(t, ms, func() {
		status.ObservedGeneration = ms.Generation
		ms.Status = status
	})
	return ms
}

// machine creates a machine of the set (nil: none) with the status.
func (p *plugin) machine(t *testing.T, ns, name string, ms *v1alpha1.MachineSet, node string, annotations map[string]string, status func(m *v1alpha1.Machine)) *v1alpha1.Machine {
	t.Helper()
	m := &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations, Labels: map[string]string{}},
		Spec:       v1alpha1.MachineSpec{Class: class()},
	}
	if node != "" {
		m.Labels[v1alpha1.NodeLabelKey] = node
	}
	if ms != nil {
		controlledByRef(m, ms, "MachineSet")
	}
	var set func()
	if status != nil {
		set = func() { status(m) }
	}
	p.create(t, m, set)
	return m
}

// node registers a Node with a Ready condition of the given status.
func (p *plugin) node(t *testing.T, name string, ready corev1.ConditionStatus, since time.Time) *corev1.Node {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	p.create(t, n, func() {
		n.Status.Conditions = []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: ready, Reason: "KubeletReady", Message: "kubelet is posting ready status",
			LastHeartbeatTime: metav1.NewTime(since), LastTransitionTime: metav1.NewTime(since),
		}}
	})
	return n
}

// latest is the newest creation time of the objects.
func latest(objs ...client.Object) time.Time {
	var t time.Time
	for _, o := range objs {
		if c := o.GetCreationTimestamp().Time; c.After(t) {
			t = c
		}
	}
	return t
}
