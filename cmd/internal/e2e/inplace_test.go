package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/cmd/internal/manifests"
	"github.com/machina-io/machina/core/api/v1alpha1"
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// agentBinary is the reference node agent.
var agentBinary = binary{name: "machina-node-agent", module: "cmd", pkg: "./machina-node-agent"}

// The in-place rollout's objects.
const (
	inPlaceClass      = "inplace-mc"
	inPlaceDeployment = "inplace-deployment"
	inPlaceSelector   = "inplace-e2e"
	inPlaceReplicas   = 3
	// configFile is what every target writes under the agent's root.
	configFile = "etc/machina/kubelet.conf"
)

// TestInPlaceRollout rolls a template change of a MachineDeployment of MCM's
// shape with strategy InPlaceUpdate (Auto, maxUnavailable 1, maxSurge 0)
// out over three machines, each node served by a real machina-node-agent
// process with its own root, state and source directories: every node ends
// with the new target's files in its root and inplace.machina.io/current set
// to the new MachineSet (written by the agent together with
// update-result=successful), every Machine keeps its name and moves to the
// new MachineSet, and the driver's VMs
// and the Node objects are the same before and after: no VM was created or
// deleted.
//
// Run it with
//
//	KUBEBUILDER_ASSETS=$(hack/envtest-assets.sh) go test -count=1 -run TestInPlaceRollout -v ./cmd/internal/e2e/
func TestInPlaceRollout(t *testing.T) {
	root, err := manifests.RepoRoot(".")
	require.NoError(t, err)
	agentBuilt := make(chan error, 1)
	agentDir := t.TempDir()
	go func() {
		_, err := buildBinaries(t.Context(), root, agentDir, agentBinary)
		agentBuilt <- err
	}()
	s := setupSuite(t)
	require.NoError(t, <-agentBuilt)
	agentPath := filepath.Join(agentDir, agentBinary.name)
	ctx := t.Context()

	class := &v1alpha1.MachineClass{
		ObjectMeta:   metav1.ObjectMeta{Namespace: namespace, Name: inPlaceClass},
		Provider:     "virtualnode",
		ProviderSpec: runtime.RawExtension{Raw: []byte(`{"bootDelay":"1s"}`)},
		SecretRef:    &corev1.SecretReference{Namespace: namespace, Name: secretName},
	}
	require.NoError(t, s.c.Create(ctx, class))
	require.NoError(t, s.c.Create(ctx, inPlaceDeploymentObject()))

	var before []v1alpha1.Machine
	s.eventually(t, fmt.Sprintf("%d machines Running with Ready nodes", inPlaceReplicas), func(ctx context.Context) (bool, string, error) {
		machines, err := s.inPlaceMachines(ctx)
		if err != nil {
			return false, "", err
		}
		before = machines
		running := 0
		for _, m := range machines {
			if m.Status.CurrentStatus.Phase == v1alpha1.MachineRunning && nodeOf(&m) != "" {
				running++
			}
		}
		return running == inPlaceReplicas && len(machines) == inPlaceReplicas, describeMachines(machines), nil
	})
	oldSet := ownerSet(&before[0])
	vmsBefore, err := s.inPlaceVMs(ctx)
	require.NoError(t, err)
	require.Len(t, vmsBefore, inPlaceReplicas)
	nodeUIDs := map[string]types.UID{}
	for _, m := range before {
		node := &corev1.Node{}
		require.NoError(t, s.c.Get(ctx, client.ObjectKey{Name: nodeOf(&m)}, node))
		nodeUIDs[node.Name] = node.UID
	}

	// The template change: a label of the machines' template (a change of
	// the node template alone is applied to the nodes without a rollout).
	patch := `{"spec":{"template":{"metadata":{"labels":{"config":"v2"}}}}}`
	md := &v1alpha1.MachineDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: inPlaceDeployment}}
	require.NoError(t, s.c.Patch(ctx, md, client.RawPatch(types.MergePatchType, []byte(patch))))

	// The target is the new MachineSet's name, which exists once the core
	// has created the set. The agents start after that, with the target's
	// sources in place: an agent started earlier would find no source for
	// it and report failed. Each agent acts on the state it finds at its
	// start, so a node that is already ReadyForUpdate is served at once.
	var newSet string
	s.eventually(t, "the new MachineSet", func(ctx context.Context) (bool, string, error) {
		var sets v1alpha1.MachineSetList
		if err := s.c.List(ctx, &sets, client.InNamespace(namespace)); err != nil {
			return false, "", err
		}
		md, err := s.inPlaceDeploymentStatus(ctx)
		if err != nil {
			return false, "", err
		}
		var names []string
		for _, ms := range sets.Items {
			if metav1.IsControlledBy(&ms, md) && ms.Name != oldSet {
				newSet = ms.Name
			}
			names = append(names, ms.Name)
		}
		return newSet != "", "sets " + strings.Join(names, ", ") + "; " + describeDeployment(md), nil
	})
	agentRoots := map[string]string{}
	for _, m := range before {
		agentRoots[nodeOf(&m)] = startAgent(t, s, agentPath, nodeOf(&m), newSet)
	}

	s.eventually(t, "every machine in the new MachineSet, Running, on an updated node", func(ctx context.Context) (bool, string, error) {
		machines, err := s.inPlaceMachines(ctx)
		if err != nil {
			return false, "", err
		}
		done := 0
		var currents []string
		for _, m := range machines {
			node := &corev1.Node{}
			if err := s.c.Get(ctx, client.ObjectKey{Name: nodeOf(&m)}, node); err != nil {
				return false, "", err
			}
			current := node.Annotations[v1alpha1.AnnotationKeyNodeCurrent]
			currents = append(currents, fmt.Sprintf("%s current=%q result=%q", node.Name, current, node.Labels[v1alpha1.LabelKeyNodeUpdateResult]))
			if ownerSet(&m) == newSet && m.Status.CurrentStatus.Phase == v1alpha1.MachineRunning && current == newSet {
				done++
			}
		}
		md, err := s.inPlaceDeploymentStatus(ctx)
		if err != nil {
			return false, "", err
		}
		return done == inPlaceReplicas && len(machines) == inPlaceReplicas && md.Status.UpdatedReplicas == inPlaceReplicas &&
				md.Status.AvailableReplicas == inPlaceReplicas,
			describeMachines(machines) + "; " + strings.Join(currents, ", ") + "; " + describeDeployment(md), nil
	})

	// No VM created or deleted: the same VMs (provider IDs) and Nodes.
	vmsAfter, err := s.inPlaceVMs(ctx)
	require.NoError(t, err)
	assert.Equal(t, vmsBefore, vmsAfter, "the driver's VMs are unchanged")
	after, err := s.inPlaceMachines(ctx)
	require.NoError(t, err)
	assert.Equal(t, machineNodes(before), machineNodes(after), "the same machines on the same nodes")
	for name, uid := range nodeUIDs {
		node := &corev1.Node{}
		require.NoError(t, s.c.Get(ctx, client.ObjectKey{Name: name}, node))
		assert.Equal(t, uid, node.UID, "Node %s is the same object", name)
		data, err := os.ReadFile(filepath.Join(agentRoots[name], configFile))
		require.NoError(t, err, "node %s: the target's file in the agent's root", name)
		assert.Equal(t, "config=v2\n", string(data))
		applied, err := os.ReadFile(filepath.Join(agentRoots[name], "applied"))
		require.NoError(t, err, "node %s: the apply command ran", name)
		assert.Equal(t, newSet+" "+name+"\n", string(applied))
		// The rollout's marks are cleaned up; current stays.
		assert.NotContains(t, node.Labels, v1alpha1.LabelKeyNodeCandidateForUpdate)
		assert.NotContains(t, node.Labels, v1alpha1.LabelKeyNodeSelectedForUpdate)
		assert.Equal(t, newSet, node.Annotations[v1alpha1.AnnotationKeyNodeCurrent])
	}
	old := &v1alpha1.MachineSet{}
	require.NoError(t, s.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: oldSet}, old))
	assert.Zero(t, old.Spec.Replicas, "the old MachineSet is scaled to 0")
}

// inPlaceDeploymentObject is MCM's shape of an in-place MachineDeployment.
func inPlaceDeploymentObject() *v1alpha1.MachineDeployment {
	labels := map[string]string{inPlaceSelector: "web"}
	maxSurge, maxUnavailable := intstr.FromInt32(0), intstr.FromInt32(1)
	return &v1alpha1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: inPlaceDeployment},
		Spec: v1alpha1.MachineDeploymentSpec{
			Replicas: inPlaceReplicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Strategy: v1alpha1.MachineDeploymentStrategy{
				Type: v1alpha1.InPlaceUpdateMachineDeploymentStrategyType,
				InPlaceUpdate: &v1alpha1.InPlaceUpdateMachineDeployment{
					UpdateConfiguration: v1alpha1.UpdateConfiguration{MaxSurge: &maxSurge, MaxUnavailable: &maxUnavailable},
					OrchestrationType:   v1alpha1.OrchestrationTypeAuto,
				},
			},
			Template: v1alpha1.MachineTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{inPlaceSelector: "web", "config": "v1"}},
				Spec:       v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Kind: "MachineClass", Name: inPlaceClass}},
			},
		},
	}
}

// startAgent starts a machina-node-agent process for node, with a root, a
// state directory and a source directory of its own; the source holds the
// target's files. It returns the agent's root.
func startAgent(t *testing.T, s *suite, path, node, target string) string {
	t.Helper()
	base := t.TempDir()
	dirs := map[string]string{}
	for _, d := range []string{"root", "state", "source"} {
		dirs[d] = filepath.Join(base, d)
		require.NoError(t, os.Mkdir(dirs[d], 0o755))
	}
	file := filepath.Join(dirs["source"], target, configFile)
	require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o755))
	require.NoError(t, os.WriteFile(file, []byte("config=v2\n"), 0o644))
	logDir := os.Getenv("MACHINA_E2E_LOG_DIR")
	if logDir == "" {
		logDir = base
	}
	startProcess(t, agentBinary.name+"-"+node, path, logDir,
		"--kubeconfig="+s.env.Kubeconfig,
		"--node-name="+node,
		"--root="+dirs["root"],
		"--source-dir="+dirs["source"],
		"--state-dir="+dirs["state"],
		`--apply-command=echo "$MACHINA_INPLACE_TARGET $MACHINA_NODE_NAME" > applied`,
	)
	return dirs["root"]
}

// inPlaceMachines returns the machines of the in-place deployment, by name.
func (s *suite) inPlaceMachines(ctx context.Context) ([]v1alpha1.Machine, error) {
	var machines v1alpha1.MachineList
	err := s.c.List(ctx, &machines, client.InNamespace(namespace), client.MatchingLabels{inPlaceSelector: "web"})
	slices.SortFunc(machines.Items, func(a, b v1alpha1.Machine) int { return strings.Compare(a.Name, b.Name) })
	return machines.Items, err
}

func (s *suite) inPlaceDeploymentStatus(ctx context.Context) (*v1alpha1.MachineDeployment, error) {
	md := &v1alpha1.MachineDeployment{}
	err := s.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: inPlaceDeployment}, md)
	return md, err
}

// inPlaceVMs lists "machine=providerID" of the driver's VMs of the class.
func (s *suite) inPlaceVMs(ctx context.Context) ([]string, error) {
	resp, err := s.vms.machines.ListMachines(ctx, &driverv1alpha1.ListMachinesRequest{MachineClass: &driverv1alpha1.MachineClass{
		Name: inPlaceClass, Namespace: namespace, Provider: "virtualnode", ProviderSpec: []byte(`{"bootDelay":"1s"}`),
	}})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range resp.GetMachines() {
		out = append(out, m.GetMachineName()+"="+m.GetProviderId())
	}
	slices.Sort(out)
	return out, nil
}

// nodeOf returns the name of a machine's Node (its "node" label).
func nodeOf(m *v1alpha1.Machine) string { return m.Labels[v1alpha1.NodeLabelKey] }

// ownerSet returns the name of a machine's controlling MachineSet.
func ownerSet(m *v1alpha1.Machine) string {
	if ref := metav1.GetControllerOf(m); ref != nil {
		return ref.Name
	}
	return ""
}

// machineNodes maps machine names to node names.
func machineNodes(machines []v1alpha1.Machine) map[string]string {
	out := map[string]string{}
	for _, m := range machines {
		out[m.Name] = nodeOf(&m)
	}
	return out
}

func describeMachines(machines []v1alpha1.Machine) string {
	parts := make([]string, 0, len(machines))
	for _, m := range machines {
		parts = append(parts, fmt.Sprintf("%s(%s, set %s, node %s)", m.Name, m.Status.CurrentStatus.Phase, ownerSet(&m), nodeOf(&m)))
	}
	return strings.Join(parts, " ")
}
