package mcpool_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
	"github.com/machina-io/machina/core/internal/controller/controllertest"
	"github.com/machina-io/machina/core/internal/controller/mcrender"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/internal/mcfg"
	"github.com/machina-io/machina/core/testenv"
)

// TestPrimaryPool is MCO's rule (pkg/helpers GetPoolsForNode) for a Node
// several pools choose.
func TestPrimaryPool(t *testing.T) {
	for _, tc := range []struct {
		pools []string
		want  string
	}{
		{[]string{"worker"}, "worker"},
		{[]string{"infra"}, "infra"},
		{[]string{"worker", "infra"}, "infra"},
		{[]string{"infra", "worker"}, "infra"},
		{[]string{"master", "worker"}, "master"},
		{[]string{"infra", "master"}, "master"},
		{[]string{"infra", "master", "worker"}, "master"},
		{[]string{"infra", "gpu"}, ""},
		{[]string{"worker", "infra", "gpu"}, ""},
		{[]string{"master", "infra", "gpu"}, ""},
	} {
		got, ok := mcfg.PrimaryPool(tc.pools)
		assert.Equal(t, tc.want, got, "%v", tc.pools)
		assert.Equal(t, tc.want != "", ok, "%v", tc.pools)
	}
}

// TestCustomPoolOverWorker runs the render and pool controllers: a Node
// labelled infra and worker (MCO's documented way to make a custom pool)
// is driven by the infra pool, whose rendering merges worker's
// MachineConfigs first; the worker pool neither counts it nor is
// Degraded.
func TestCustomPoolOverWorker(t *testing.T) {
	env := testenv.Start(t)
	c := env.Client
	startControllers(t, env, func(mgr ctrl.Manager) error {
		return (&mcrender.Reconciler{}).SetupWithManager(mgr, setup.Env{Target: mgr, Workers: 2})
	})

	// 10-infra sorts before 50-worker by name: only the role order (worker
	// first) makes infra's content win.
	for _, mc := range []struct{ name, role, content string }{
		{"50-worker", "worker", "worker"},
		{"10-infra", "infra", "infra"},
	} {
		obj := &mcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: mc.name, Labels: map[string]string{mcv1.RoleLabel: mc.role}}}
		obj.Spec.Config = runtime.RawExtension{Raw: []byte(`{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/etc/role","mode":420,"contents":{"source":"` +
			mcv1.DataURL([]byte(mc.content)) + `"}},{"path":"/etc/` + mc.role + `","contents":{"source":"data:,x"}}]}}`)}
		require.NoError(t, c.Create(t.Context(), obj))
	}
	for _, p := range []struct {
		name  string
		roles []string
	}{
		{"worker", []string{"worker"}},
		{"infra", []string{"worker", "infra"}},
	} {
		pool := &mcv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: p.name}}
		pool.Spec.MachineConfigSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: mcv1.RoleLabel, Operator: metav1.LabelSelectorOpIn, Values: p.roles}}}
		pool.Spec.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/" + p.name: ""}}
		require.NoError(t, c.Create(t.Context(), pool))
	}
	workerTarget := controllertest.WaitObject(t, c, client.ObjectKey{Name: "worker"}, "rendered", func(p *mcv1.MachineConfigPool) bool { return p.Spec.Configuration.Name != "" }).Spec.Configuration.Name
	infraPool := controllertest.WaitObject(t, c, client.ObjectKey{Name: "infra"}, "rendered", func(p *mcv1.MachineConfigPool) bool { return p.Spec.Configuration.Name != "" })
	infraTarget := infraPool.Spec.Configuration.Name
	var sources []string
	for _, s := range infraPool.Spec.Configuration.Source {
		sources = append(sources, s.Name)
	}
	assert.Equal(t, []string{"50-worker", "10-infra"}, sources, "worker's MachineConfigs are merged first")
	rendered := &mcv1.MachineConfig{}
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Name: infraTarget}, rendered))
	ign, err := mcv1.ParseIgnition(rendered.Spec.Config.Raw)
	require.NoError(t, err)
	files := map[string]string{}
	for _, f := range ign.Storage.Files {
		data, err := f.Data()
		require.NoError(t, err)
		files[f.Path] = string(data)
	}
	assert.Equal(t, map[string]string{"/etc/role": "infra", "/etc/worker": "x", "/etc/infra": "x"}, files,
		"infra's rendering holds worker's files, infra's winning")

	worker := createNodes(t, c, "plain", 1, map[string]string{"node-role.kubernetes.io/worker": ""}, "")[0]
	infra := createNodes(t, c, "infra", 1, map[string]string{"node-role.kubernetes.io/worker": "", "node-role.kubernetes.io/infra": ""}, "")[0]
	controllertest.WaitObject(t, c, client.ObjectKey{Name: infra}, "given infra's configuration", func(n *corev1.Node) bool { return n.Annotations[keyDesired] == infraTarget })
	controllertest.WaitObject(t, c, client.ObjectKey{Name: worker}, "given worker's configuration", func(n *corev1.Node) bool { return n.Annotations[keyDesired] == workerTarget })
	agentUpdate(t, c, infra)
	agentUpdate(t, c, worker)

	for name, target := range map[string]string{"worker": workerTarget, "infra": infraTarget} {
		pool := controllertest.WaitObject(t, c, client.ObjectKey{Name: name}, "updated", func(p *mcv1.MachineConfigPool) bool {
			return conditionIs(p, mcv1.PoolUpdated, metav1.ConditionTrue) && p.Status.Configuration.Name == target
		})
		assert.Equal(t, int32(1), pool.Status.MachineCount, "pool %s counts one node: the node of two pools only in infra", name)
		assert.True(t, conditionIs(pool, mcv1.PoolDegraded, metav1.ConditionFalse), "pool %s: %+v", name, conditionOf(pool, mcv1.PoolDegraded))
	}
	assert.Equal(t, infraTarget, controllertest.GetNode(t, c, infra).Annotations[keyCurrent])

	// The node leaves infra: worker takes it and gives it worker's rendering.
	node := controllertest.GetNode(t, c, infra)
	patched := node.DeepCopy()
	delete(patched.Labels, "node-role.kubernetes.io/infra")
	require.NoError(t, c.Patch(t.Context(), patched, clientMergeFrom(node)))
	controllertest.WaitObject(t, c, client.ObjectKey{Name: infra}, "given worker's configuration", func(n *corev1.Node) bool { return n.Annotations[keyDesired] == workerTarget })
	agentUpdate(t, c, infra)
	controllertest.WaitObject(t, c, client.ObjectKey{Name: "worker"}, "two nodes", func(p *mcv1.MachineConfigPool) bool {
		return p.Status.MachineCount == 2 && conditionIs(p, mcv1.PoolUpdated, metav1.ConditionTrue)
	})
	controllertest.WaitObject(t, c, client.ObjectKey{Name: "infra"}, "no nodes", func(p *mcv1.MachineConfigPool) bool { return p.Status.MachineCount == 0 })
}
