package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/cmd/internal/manifests"
	"github.com/machina-io/machina/cmd/internal/nodeimage"
	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
	"github.com/machina-io/machina/core/api/v1alpha1"
)

// The pool rollout's objects.
const (
	poolClass      = "pool-mc"
	poolDeployment = "pool-deployment"
	poolSelector   = "pool-e2e"
	poolName       = "e2e"
	poolReplicas   = 3
	poolFile       = "/etc/machina/pool.conf"
	poolUnit       = "pool-e2e.service"
	poolSSHKey     = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIE2eTestKeyOnly e2e@example"
)

// TestMachineConfigPoolRollout rolls a MachineConfig with a file and a
// systemd unit out to a pool made of a MachineDeployment's three machines
// (spec.machineOwnerRef), maxUnavailable 1, each node served by a real
// machina-node-agent process with its own root: the manager's render
// controller renders the pool's configuration, its update controller gives
// it to one node at a time, the agents write the file and the unit into
// their roots (asking the manager's drain controller for the drain and the
// uncordon), and the pool ends Updated with every node on the rendered
// configuration, schedulable, and the files on disk.
//
// Run it with
//
//	KUBEBUILDER_ASSETS=$(hack/envtest-assets.sh) go test -count=1 -run TestMachineConfigPoolRollout -v ./cmd/internal/e2e/
func TestMachineConfigPoolRollout(t *testing.T) {
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
		ObjectMeta:   metav1.ObjectMeta{Namespace: namespace, Name: poolClass},
		Provider:     "virtualnode",
		ProviderSpec: runtime.RawExtension{Raw: []byte(`{"bootDelay":"1s"}`)},
		SecretRef:    &corev1.SecretReference{Namespace: namespace, Name: secretName},
	}
	require.NoError(t, s.c.Create(ctx, class))
	labels := map[string]string{poolSelector: "web"}
	require.NoError(t, s.c.Create(ctx, &v1alpha1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: poolDeployment},
		Spec: v1alpha1.MachineDeploymentSpec{
			Replicas: poolReplicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1alpha1.MachineTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Kind: "MachineClass", Name: poolClass}},
			},
		},
	}))
	var nodes []string
	s.eventually(t, fmt.Sprintf("%d machines Running with Ready nodes", poolReplicas), func(ctx context.Context) (bool, string, error) {
		var machines v1alpha1.MachineList
		if err := s.c.List(ctx, &machines, client.InNamespace(namespace), client.MatchingLabels(labels)); err != nil {
			return false, "", err
		}
		nodes = nodes[:0]
		for _, m := range machines.Items {
			if m.Status.CurrentStatus.Phase == v1alpha1.MachineRunning && nodeOf(&m) != "" {
				nodes = append(nodes, nodeOf(&m))
			}
		}
		return len(nodes) == poolReplicas && len(machines.Items) == poolReplicas, describeMachines(machines.Items), nil
	})
	slices.Sort(nodes)

	agents := map[string]poolAgent{}
	for _, node := range nodes {
		agents[node] = startPoolAgent(t, s, agentPath, node)
	}
	peak := watchPoolInFlight(t, s, nodes)

	// The user's MachineConfig, as written for OpenShift, and the pool.
	ignition := map[string]any{
		"ignition": map[string]any{"version": "3.2.0"},
		"passwd":   map[string]any{"users": []any{map[string]any{"name": "core", "sshAuthorizedKeys": []any{poolSSHKey}}}},
		"storage": map[string]any{"files": []any{map[string]any{
			"path": poolFile, "mode": 0o640, "overwrite": true,
			"contents": map[string]any{"source": "data:,pool%3De2e%0A"},
		}}},
		"systemd": map[string]any{"units": []any{map[string]any{
			"name": poolUnit, "enabled": true,
			"contents": "[Unit]\nDescription=machina e2e\n[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n",
		}}},
	}
	raw, err := json.Marshal(ignition)
	require.NoError(t, err)
	mc := &mcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "99-e2e-pool", Labels: map[string]string{mcv1.RoleLabel: poolName}}}
	mc.Spec.Config.Raw = raw
	mc.Spec.KernelArguments = []string{"nosmt"}
	require.NoError(t, s.c.Create(ctx, mc))
	// A ContainerRuntimeConfig for the pool, rendered into it by the
	// manager and written by the agents as a CRI-O drop-in.
	crc := &mcv1.ContainerRuntimeConfig{ObjectMeta: metav1.ObjectMeta{Name: "e2e-pids"}}
	crc.Spec.MachineConfigPoolSelector = &metav1.LabelSelector{MatchLabels: map[string]string{poolSelector: poolName}}
	crc.Spec.ContainerRuntimeConfig = &mcv1.ContainerRuntimeConfiguration{PidsLimit: ptr.To[int64](2048)}
	require.NoError(t, s.c.Create(ctx, crc))
	one := intstr.FromInt32(1)
	pool := &mcv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: poolName, Labels: map[string]string{poolSelector: poolName}}}
	pool.Spec.MachineConfigSelector = &metav1.LabelSelector{MatchLabels: map[string]string{mcv1.RoleLabel: poolName}}
	pool.Spec.MachineOwnerRef = &mcv1.MachineOwnerReference{Kind: "MachineDeployment", Namespace: namespace, Name: poolDeployment}
	pool.Spec.MaxUnavailable = &one
	// Paused until its rendered configuration holds both fragments: the
	// ContainerRuntimeConfig's MachineConfig is generated only once the
	// pool exists, so an unpaused pool may start a node on a rendering
	// without it and then update that node a second time (two reboots).
	pool.Spec.Paused = true
	require.NoError(t, s.c.Create(ctx, pool))
	s.eventually(t, "the pool's rendering holds the MachineConfig and the ContainerRuntimeConfig", func(ctx context.Context) (bool, string, error) {
		p := &mcv1.MachineConfigPool{}
		if err := s.c.Get(ctx, client.ObjectKey{Name: poolName}, p); err != nil {
			return false, "", err
		}
		var names []string
		for _, src := range p.Spec.Configuration.Source {
			names = append(names, src.Name)
		}
		return slices.Contains(names, mc.Name) && slices.Contains(names, "99-"+poolName+"-generated-containerruntime"), fmt.Sprint(names), nil
	})
	require.NoError(t, s.c.Patch(ctx, pool, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"paused":false}}`))))

	var target string
	s.eventually(t, "the pool Updated on its rendered configuration", func(ctx context.Context) (bool, string, error) {
		p := &mcv1.MachineConfigPool{}
		if err := s.c.Get(ctx, client.ObjectKey{Name: poolName}, p); err != nil {
			return false, "", err
		}
		target = p.Spec.Configuration.Name
		updated := meta.IsStatusConditionTrue(p.Status.Conditions, mcv1.PoolUpdated)
		state := fmt.Sprintf("target %q, status %+v", target, p.Status)
		return updated && target != "" && p.Status.Configuration.Name == target && p.Status.UpdatedMachineCount == poolReplicas, state, nil
	})
	assert.True(t, strings.HasPrefix(target, "rendered-"+poolName+"-"), target)
	assert.Equal(t, 1, peak.max(), "one node at a time (maxUnavailable 1)")

	for _, name := range nodes {
		node := &corev1.Node{}
		require.NoError(t, s.c.Get(ctx, client.ObjectKey{Name: name}, node))
		assert.Equal(t, target, node.Annotations[mcv1.CurrentConfigAnnotation], name)
		assert.Equal(t, mcv1.MachineConfigStateDone, node.Annotations[mcv1.StateAnnotation], name)
		assert.Equal(t, mcv1.UncordonRequestPrefix+target, node.Annotations[mcv1.LastAppliedDrainAnnotation], name)
		assert.False(t, node.Spec.Unschedulable, "node %s is uncordoned", name)

		r := agents[name].root
		assert.Equal(t, "drain, reboot", node.Annotations[mcv1.LastActionsAnnotation], name)
		calls, err := agents[name].systemctl.Calls()
		require.NoError(t, err)
		assert.Equal(t, []string{"reboot"}, calls, "node %s: the reboot is asked once, and nothing else", name)
		keys, err := os.ReadFile(filepath.Join(r, "home/core/.ssh/authorized_keys.d/ignition"))
		require.NoError(t, err, "node %s: core's SSH keys", name)
		assert.Equal(t, poolSSHKey+"\n", string(keys))
		entry, err := os.ReadFile(filepath.Join(r, filepath.FromSlash(nodeimage.BootEntry)))
		require.NoError(t, err)
		assert.Contains(t, string(entry), "options "+nodeimage.BootOptions+" nosmt\n", "node %s: the kernel argument in the boot entry", name)
		data, err := os.ReadFile(filepath.Join(r, poolFile))
		require.NoError(t, err, "node %s: the file in the agent's root", name)
		assert.Equal(t, "pool=e2e\n", string(data))
		info, err := os.Stat(filepath.Join(r, poolFile))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o640), info.Mode().Perm())
		dropin, err := os.ReadFile(filepath.Join(r, "etc/crio/crio.conf.d/01-ctrcfg-pidsLimit"))
		require.NoError(t, err, "node %s: the ContainerRuntimeConfig's CRI-O drop-in", name)
		assert.Equal(t, "[crio.runtime]\npids_limit = 2048\n", string(dropin))
		unit, err := os.ReadFile(filepath.Join(r, "etc/systemd/system", poolUnit))
		require.NoError(t, err, "node %s: the unit in the agent's root", name)
		assert.Contains(t, string(unit), "Description=machina e2e")
		link, err := os.Readlink(filepath.Join(r, "etc/systemd/system/multi-user.target.wants", poolUnit))
		require.NoError(t, err, "node %s: the unit is enabled", name)
		assert.Equal(t, "/etc/systemd/system/"+poolUnit, link)
	}

	// A bad MachineConfig (a unit to enable that no node has) degrades the
	// first node it reaches; reverting it (deleting it) heals the pool with
	// no manual step: the node is given the pool's render again and its
	// agent, which retries, reaches Done. maxUnavailable holds throughout.
	bad := &mcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "99-e2e-bad", Labels: map[string]string{mcv1.RoleLabel: poolName}}}
	bad.Spec.Config.Raw = []byte(`{"ignition":{"version":"3.2.0"},"systemd":{"units":[{"name":"missing.service","enabled":true}]}}`)
	require.NoError(t, s.c.Create(ctx, bad))
	var degraded string
	s.eventually(t, "a node Degraded on the bad configuration, naming the unit", func(ctx context.Context) (bool, string, error) {
		for _, name := range nodes {
			node := &corev1.Node{}
			if err := s.c.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
				return false, "", err
			}
			if node.Annotations[mcv1.StateAnnotation] == mcv1.MachineConfigStateDegraded &&
				strings.Contains(node.Annotations[mcv1.ReasonAnnotation], "systemd.units (missing.service).enabled") {
				degraded = name
				return true, "", nil
			}
		}
		return false, "no node degraded yet", nil
	})
	require.NoError(t, s.c.Delete(ctx, bad))
	s.eventually(t, "the pool Updated again on its first render", func(ctx context.Context) (bool, string, error) {
		p := &mcv1.MachineConfigPool{}
		if err := s.c.Get(ctx, client.ObjectKey{Name: poolName}, p); err != nil {
			return false, "", err
		}
		updated := meta.IsStatusConditionTrue(p.Status.Conditions, mcv1.PoolUpdated)
		return updated && p.Spec.Configuration.Name == target && p.Status.UpdatedMachineCount == poolReplicas &&
			p.Status.DegradedMachineCount == 0, fmt.Sprintf("status %+v", p.Status), nil
	})
	node := &corev1.Node{}
	require.NoError(t, s.c.Get(ctx, client.ObjectKey{Name: degraded}, node))
	assert.Equal(t, target, node.Annotations[mcv1.CurrentConfigAnnotation], "the degraded node is back on the pool's render")
	assert.Equal(t, mcv1.MachineConfigStateDone, node.Annotations[mcv1.StateAnnotation])
	assert.False(t, node.Spec.Unschedulable, "node %s is uncordoned", degraded)
	assert.Equal(t, 1, peak.max(), "one node at a time throughout (maxUnavailable 1)")

	// A failure only the node can find (a file at a path that is a
	// directory on the node, which no render can know) wedges the first
	// node it reaches, drained and Degraded naming the path; deleting the
	// MachineConfig heals it: back on the pool's render, uncordoned, the
	// pool Updated.
	dir := &mcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "99-e2e-dir", Labels: map[string]string{mcv1.RoleLabel: poolName}}}
	dir.Spec.Config.Raw = []byte(`{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/etc/kubernetes","contents":{"source":"data:,x"}}]}}`)
	require.NoError(t, s.c.Create(ctx, dir))
	s.eventually(t, "a node drained and Degraded on the file at a directory, naming it", func(ctx context.Context) (bool, string, error) {
		for _, name := range nodes {
			node := &corev1.Node{}
			if err := s.c.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
				return false, "", err
			}
			if node.Annotations[mcv1.StateAnnotation] == mcv1.MachineConfigStateDegraded && node.Spec.Unschedulable &&
				strings.Contains(node.Annotations[mcv1.ReasonAnnotation], "/etc/kubernetes exists and is a directory") {
				degraded = name
				return true, "", nil
			}
		}
		return false, "no node degraded yet", nil
	})
	require.NoError(t, s.c.Delete(ctx, dir))
	s.eventually(t, "the pool Updated again after the MachineConfig is deleted", func(ctx context.Context) (bool, string, error) {
		p := &mcv1.MachineConfigPool{}
		if err := s.c.Get(ctx, client.ObjectKey{Name: poolName}, p); err != nil {
			return false, "", err
		}
		updated := meta.IsStatusConditionTrue(p.Status.Conditions, mcv1.PoolUpdated)
		return updated && p.Spec.Configuration.Name == target && p.Status.UpdatedMachineCount == poolReplicas &&
			p.Status.DegradedMachineCount == 0, fmt.Sprintf("status %+v", p.Status), nil
	})
	require.NoError(t, s.c.Get(ctx, client.ObjectKey{Name: degraded}, node))
	assert.Equal(t, target, node.Annotations[mcv1.CurrentConfigAnnotation], "the wedged node is back on the pool's render")
	assert.Equal(t, mcv1.MachineConfigStateDone, node.Annotations[mcv1.StateAnnotation])
	assert.False(t, node.Spec.Unschedulable, "node %s is uncordoned", degraded)
	info, err := os.Stat(filepath.Join(agents[degraded].root, "etc/kubernetes"))
	require.NoError(t, err)
	assert.True(t, info.IsDir(), "the node's directory is untouched")
	assert.Equal(t, 1, peak.max(), "one node at a time throughout (maxUnavailable 1)")
}

// poolAgent is one node's agent: its root (seeded with an image) and its
// recording systemctl.
type poolAgent struct {
	root      string
	systemctl nodeimage.Systemctl
}

// startPoolAgent starts a machina-node-agent process for node with a root
// seeded with an image (cmd/internal/nodeimage), a state directory, an
// (empty) in-place source directory and a recording systemctl of its own.
func startPoolAgent(t *testing.T, s *suite, path, node string) poolAgent {
	t.Helper()
	base := t.TempDir()
	dirs := map[string]string{}
	for _, d := range []string{"root", "state", "source"} {
		dirs[d] = filepath.Join(base, d)
		require.NoError(t, os.Mkdir(dirs[d], 0o755))
	}
	require.NoError(t, nodeimage.Seed(dirs["root"]))
	systemctl, err := nodeimage.WriteSystemctl(filepath.Join(base, "bin"), dirs["root"])
	require.NoError(t, err)
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
		"--drift-check-interval=1s",
		"--retry-interval=1s",
		"--systemctl="+systemctl.Path,
		"--boot-id-file="+filepath.Join(dirs["root"], filepath.FromSlash(nodeimage.BootIDFile)),
		"--fips-file="+filepath.Join(dirs["root"], filepath.FromSlash(nodeimage.FIPSFile)),
	)
	return poolAgent{root: dirs["root"], systemctl: systemctl}
}

// poolPeak records the most nodes seen at once with a desiredConfig they
// have not finished (not current, or the agent not Done).
type poolPeak struct {
	mu   sync.Mutex
	most int
}

func (p *poolPeak) max() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.most
}

// watchPoolInFlight polls the nodes every few milliseconds until the test
// ends.
func watchPoolInFlight(t *testing.T, s *suite, nodes []string) *poolPeak {
	p := &poolPeak{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			var list corev1.NodeList
			if err := s.c.List(ctx, &list); err == nil {
				n := 0
				for _, node := range list.Items {
					a := node.Annotations
					d := a[mcv1.DesiredConfigAnnotation]
					if slices.Contains(nodes, node.Name) && d != "" &&
						(d != a[mcv1.CurrentConfigAnnotation] || a[mcv1.StateAnnotation] != mcv1.MachineConfigStateDone) {
						n++
					}
				}
				p.mu.Lock()
				p.most = max(p.most, n)
				p.mu.Unlock()
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return p
}
