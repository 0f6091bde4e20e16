package pythoninmemory

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/conformance/conformancetest"
	machinav1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/testenv"
	"github.com/machina-io/machina/internal/process"
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

const (
	e2eNamespace = "default"
	e2eClass     = "python-e2e"
	e2eMD        = "python-workers"
)

// TestManagerWithPythonDriver runs the machina manager binary with the
// Python driver as its sidecar process, on a real API server, and brings a
// MachineDeployment from 0 to 3 running machines and back to 0. The test
// plays the kubelets: for every machine that has a VM it registers a Ready
// Node with the machine's node name and provider ID.
func TestManagerWithPythonDriver(t *testing.T) {
	env := testenv.Start(t)
	d := startDriver(t)
	manager := buildManager(t)
	ctx, cancel := context.WithCancel(context.Background())
	c := env.Client

	startManager(t, manager, env.Kubeconfig, d.Endpoint)
	kubelets := make(chan struct{})
	go func() {
		defer close(kubelets)
		provideNodes(ctx, t, c)
	}()
	t.Cleanup(func() {
		cancel()
		<-kubelets
	})

	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: e2eClass, Namespace: e2eNamespace},
		Data:       map[string][]byte{"userData": []byte("#cloud-config\n"), "token": []byte("e2e-token")},
	}
	require.NoError(t, c.Create(ctx, secret))
	class := &machinav1alpha1.MachineClass{
		ObjectMeta:   metav1.ObjectMeta{Name: e2eClass, Namespace: e2eNamespace},
		ProviderSpec: runtime.RawExtension{Raw: []byte(`{"size":"small"}`)},
		Provider:     "python-inmemory",
		SecretRef:    &corev1.SecretReference{Name: secret.Name, Namespace: secret.Namespace},
	}
	require.NoError(t, c.Create(ctx, class))
	labels := map[string]string{"pool": e2eMD}
	md := &machinav1alpha1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: e2eMD, Namespace: e2eNamespace},
		Spec: machinav1alpha1.MachineDeploymentSpec{
			Replicas: 3,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: machinav1alpha1.MachineTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: machinav1alpha1.MachineSpec{
					Class: machinav1alpha1.ClassSpec{Kind: "MachineClass", Name: e2eClass},
				},
			},
		},
	}
	require.NoError(t, c.Create(ctx, md))

	machines := driverv1alpha1.NewMachineServiceClient(conformancetest.Dial(t, d.Endpoint))
	listVMs := func() map[string]string {
		resp, err := machines.ListMachines(ctx, &driverv1alpha1.ListMachinesRequest{MachineClass: &driverv1alpha1.MachineClass{
			Name: e2eClass, Namespace: e2eNamespace, ProviderSpec: class.ProviderSpec.Raw,
		}})
		require.NoError(t, err)
		vms := map[string]string{}
		for _, m := range resp.GetMachines() {
			vms[m.GetMachineName()] = m.GetProviderId()
		}
		return vms
	}

	// Up to 3: three Running machines, each backed by one VM of the Python
	// driver with the provider ID the machine records.
	requireEventually(t, 3*time.Minute, "3 running machines and an available MachineDeployment", func() (bool, string) {
		list := machineList(ctx, t, c)
		running := 0
		for _, m := range list {
			if m.Status.CurrentStatus.Phase == machinav1alpha1.MachineRunning {
				running++
			}
		}
		got := &machinav1alpha1.MachineDeployment{}
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(md), got))
		return running == 3 && got.Status.AvailableReplicas == 3,
			fmt.Sprintf("machines %s; deployment status %+v", describeMachines(list), got.Status)
	})
	vms := listVMs()
	list := machineList(ctx, t, c)
	require.Len(t, vms, 3)
	for _, m := range list {
		assert.Equal(t, vms[m.Name], m.Spec.ProviderID, "machine %s and its VM", m.Name)
	}

	// Down to 0: every machine, VM and Node goes away.
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(md), md))
	md.Spec.Replicas = 0
	require.NoError(t, c.Update(ctx, md))
	requireEventually(t, 3*time.Minute, "no machines, no VMs, no nodes", func() (bool, string) {
		list := machineList(ctx, t, c)
		nodes := &corev1.NodeList{}
		require.NoError(t, c.List(ctx, nodes))
		vms := listVMs()
		return len(list) == 0 && len(vms) == 0 && len(nodes.Items) == 0,
			fmt.Sprintf("machines %s; VMs %v; %d nodes", describeMachines(list), vms, len(nodes.Items))
	})
	// The deployment's status follows its sets' once they have synced:
	// wait for it rather than read it the moment the machines are gone.
	requireEventually(t, time.Minute, "the deployment's status counts no replicas", func() (bool, string) {
		got := &machinav1alpha1.MachineDeployment{}
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(md), got))
		return got.Status.Replicas == 0, fmt.Sprintf("status.replicas %d", got.Status.Replicas)
	})
}

// buildManager builds cmd/machina-manager from this work tree.
func buildManager(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "machina-manager")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/machina-manager")
	cmd.Dir = filepath.Join(driverDir(t), "..", "..")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "building the manager (cmd/machina-manager):\n%s", out)
	return bin
}

// startManager runs the manager against the API server with the driver's
// endpoint, as the pod does (deploy/base/manager.yaml), and stops it with
// SIGTERM when the test ends.
func startManager(t *testing.T, bin, kubeconfig, endpoint string) {
	t.Helper()
	logs := &process.Buffer{}
	p, err := process.Start(process.Config{
		Name: "machina-manager",
		Path: bin,
		Args: []string{
			"--control-kubeconfig=" + kubeconfig,
			"--namespace=" + e2eNamespace,
			"--driver-endpoint=" + endpoint,
			"--leader-elect=false",
			"--metrics-bind-address=0",
			"--health-probe-bind-address=0",
			"--machine-safety-orphan-vms-period=5s",
		},
		Env:    append(os.Environ(), "MACHINA_DRIVER_ENDPOINT="+endpoint),
		Output: logs,
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		if err := p.Stop(time.Minute); err != nil {
			t.Error(err)
		} else {
			assert.NoError(t, p.Err(), "the manager's exit")
		}
		if t.Failed() {
			t.Logf("manager log:\n%s", logs.String())
		}
	})
}

// provideNodes plays the kubelet of every VM: a machine that has a provider
// ID and a node label, and is not being deleted, gets a Ready Node of that
// name. It runs until ctx ends.
func provideNodes(ctx context.Context, t *testing.T, c client.Client) {
	ticker := time.NewTicker(200 * time.Millisecond)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		list := &machinav1alpha1.MachineList{}
		if err := c.List(ctx, list, client.InNamespace(e2eNamespace)); err != nil {
			continue
		}
		for _, m := range list.Items {
			name := m.Labels["node"]
			if name == "" || m.Spec.ProviderID == "" || m.DeletionTimestamp != nil {
				continue
			}
			if err := registerNode(ctx, c, name, m.Spec.ProviderID); err != nil && ctx.Err() == nil {
				// Conflicts with the core's node updates are retried next tick.
				t.Logf("registering node %s: %v", name, err)
			}
		}
	}
}

// registerNode creates the Node unless it exists and makes it Ready.
func registerNode(ctx context.Context, c client.Client, name, providerID string) error {
	node := &corev1.Node{}
	err := c.Get(ctx, client.ObjectKey{Name: name}, node)
	if apierrors.IsNotFound(err) {
		node = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: providerID}}
		err = c.Create(ctx, node)
	}
	if err != nil {
		return err
	}
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
			return nil
		}
	}
	now := metav1.Now()
	node.Status.Conditions = []corev1.NodeCondition{{
		Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		LastHeartbeatTime: now, LastTransitionTime: now,
	}}
	return c.Status().Update(ctx, node)
}

func machineList(ctx context.Context, t *testing.T, c client.Client) []machinav1alpha1.Machine {
	list := &machinav1alpha1.MachineList{}
	require.NoError(t, c.List(ctx, list, client.InNamespace(e2eNamespace)))
	return list.Items
}

func describeMachines(list []machinav1alpha1.Machine) string {
	out := make([]string, 0, len(list))
	for _, m := range list {
		out = append(out, fmt.Sprintf("%s=%s", m.Name, m.Status.CurrentStatus.Phase))
	}
	sort.Strings(out)
	return fmt.Sprint(out)
}

// requireEventually polls cond until it holds, failing with its last
// description when timeout passes.
func requireEventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s; last state: %s", timeout, what, state)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
