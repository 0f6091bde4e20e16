package mctemplate_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	mcfgv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
	"github.com/machina-io/machina/core/internal/controller/controllertest"
	"github.com/machina-io/machina/core/internal/controller/mckubelet"
	"github.com/machina-io/machina/core/internal/controller/mcrender"
	"github.com/machina-io/machina/core/internal/controller/mctemplate"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/testenv"
)

// TestTemplates runs the template, KubeletConfig and render controllers
// against a real API server: a ControllerConfig gives every role its base
// MachineConfigs, which a KubeletConfig merges over and which come back
// when edited or deleted.
func TestTemplates(t *testing.T) {
	env := testenv.Start(t)
	controllertest.StartManager(t, env, func(mgr ctrl.Manager) error {
		if err := (&mcrender.Reconciler{}).SetupWithManager(mgr, setup.Env{Target: mgr, Workers: 1}); err != nil {
			return err
		}
		if err := (&mckubelet.Reconciler{}).SetupWithManager(mgr, setup.Env{Target: mgr, Workers: 1}); err != nil {
			return err
		}
		return (&mctemplate.Reconciler{}).SetupWithManager(mgr, setup.Env{Target: mgr, Workers: 1})
	})
	c := env.Client
	ctx := t.Context()

	cc := &mcfgv1.ControllerConfig{
		ObjectMeta: metav1.ObjectMeta{Name: mcfgv1.ControllerConfigName},
		Spec:       mcfgv1.ControllerConfigSpec{ClusterDNSIP: "172.30.0.10"},
	}
	require.NoError(t, c.Create(ctx, cc))

	var templateConf string
	t.Run("the built-in pools and the base MachineConfigs of master and worker", func(t *testing.T) {
		for _, role := range []string{"master", "worker"} {
			p := controllertest.WaitObject(t, c, client.ObjectKey{Name: role}, "been created", func(*mcfgv1.MachineConfigPool) bool { return true })
			assert.Contains(t, p.Labels, mcfgv1.PoolOperatorLabelPrefix+role)
			assert.Equal(t, map[string]string{mcfgv1.RoleLabel: role}, p.Spec.MachineConfigSelector.MatchLabels)
			assert.Equal(t, map[string]string{"node-role.kubernetes.io/" + role: ""}, p.Spec.NodeSelector.MatchLabels)

			mc := waitMC(t, c, "01-"+role+"-kubelet")
			owner := metav1.GetControllerOf(mc)
			require.NotNil(t, owner)
			assert.Equal(t, "ControllerConfig", owner.Kind)
			assert.Equal(t, role, mc.Labels[mcfgv1.RoleLabel])
			conf := kubeletConf(t, mc)
			assert.Equal(t, []any{"172.30.0.10"}, conf["clusterDNS"])
			assert.Equal(t, "cluster.local", conf["clusterDomain"])
			assert.Equal(t, "/etc/kubernetes/manifests", conf["staticPodPath"])
			unit := unitContents(t, mc, "kubelet.service")
			assert.Contains(t, unit, "--node-labels=node-role.kubernetes.io/"+role+" ")
			assert.Contains(t, unit, "--config=/etc/kubernetes/kubelet.conf")
			assert.Equal(t, "NODE_SIZING_ENABLED=false\nSYSTEM_RESERVED_MEMORY=1Gi\nSYSTEM_RESERVED_CPU=500m\nSYSTEM_RESERVED_ES=1Gi\n",
				fileData(t, mc, mckubelet.NodeSizingEnvPath))
		}
		templateConf = fileData(t, waitMC(t, c, "01-worker-kubelet"), mcfgv1.KubeletConfigPath)
		cond := waitCondition(t, c, mcfgv1.TemplateControllerCompleted)
		assert.Equal(t, "Base MachineConfigs written for roles master, worker", cond.Message)
	})

	t.Run("a custom pool is a role", func(t *testing.T) {
		require.NoError(t, c.Create(ctx, &mcfgv1.MachineConfigPool{
			ObjectMeta: metav1.ObjectMeta{Name: "infra"},
			Spec: mcfgv1.MachineConfigPoolSpec{MachineConfigSelector: &metav1.LabelSelector{
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: mcfgv1.RoleLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{"worker", "infra"}}}}},
		}))
		mc := waitMC(t, c, "01-infra-kubelet")
		assert.Contains(t, unitContents(t, mc, "kubelet.service"), "--node-labels=node-role.kubernetes.io/infra ")

		require.NoError(t, c.Delete(ctx, &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "infra"}}))
		controllertest.Eventually(t, func() bool {
			return apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Name: "01-infra-kubelet"}, &mcfgv1.MachineConfig{}))
		}, "01-infra-kubelet outlived its pool")
	})

	t.Run("an edited base MachineConfig is written back", func(t *testing.T) {
		mc := &mcfgv1.MachineConfig{}
		require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := c.Get(ctx, client.ObjectKey{Name: "01-worker-kubelet"}, mc); err != nil {
				return err
			}
			mc.Spec.Config = runtime.RawExtension{Raw: []byte(`{"ignition":{"version":"3.5.0"}}`)}
			mc.Labels[mcfgv1.RoleLabel] = "elsewhere"
			return c.Update(ctx, mc)
		}))
		controllertest.Eventually(t, func() bool {
			return c.Get(ctx, client.ObjectKey{Name: "01-worker-kubelet"}, mc) == nil &&
				mc.Labels[mcfgv1.RoleLabel] == "worker" && strings.Contains(string(mc.Spec.Config.Raw), "kubelet.conf")
		}, "the edit of 01-worker-kubelet was never undone")
		controllertest.RequireEvent(t, c, cc, mctemplate.ReasonWritten, "Updated 01-worker-kubelet")

		uid := mc.UID
		require.NoError(t, c.Delete(ctx, mc))
		controllertest.Eventually(t, func() bool {
			return c.Get(ctx, client.ObjectKey{Name: "01-worker-kubelet"}, mc) == nil && mc.UID != uid
		}, "the deleted 01-worker-kubelet was never written again")
		assert.Equal(t, templateConf, fileData(t, mc, mcfgv1.KubeletConfigPath))
	})

	t.Run("a KubeletConfig merges over the template's kubelet.conf, and its deletion restores it", func(t *testing.T) {
		renderedConf := func() string {
			p := &mcfgv1.MachineConfigPool{}
			rendered := &mcfgv1.MachineConfig{}
			if c.Get(ctx, client.ObjectKey{Name: "worker"}, p) != nil || p.Spec.Configuration.Name == "" ||
				c.Get(ctx, client.ObjectKey{Name: p.Spec.Configuration.Name}, rendered) != nil {
				return ""
			}
			return fileData(t, rendered, mcfgv1.KubeletConfigPath)
		}
		controllertest.Eventually(t, func() bool { return renderedConf() == templateConf }, "worker never rendered the template's kubelet.conf")

		kc := &mcfgv1.KubeletConfig{
			ObjectMeta: metav1.ObjectMeta{Name: "max-pods"},
			Spec: mcfgv1.KubeletConfigSpec{
				// The selector of MCO's documentation.
				MachineConfigPoolSelector: &metav1.LabelSelector{MatchLabels: map[string]string{mcfgv1.PoolOperatorLabelPrefix + "worker": ""}},
				KubeletConfig:             &runtime.RawExtension{Raw: []byte(`{"maxPods":500}`)},
			},
		}
		require.NoError(t, c.Create(ctx, kc))
		var merged map[string]any
		controllertest.Eventually(t, func() bool {
			merged = nil
			return yaml.Unmarshal([]byte(renderedConf()), &merged) == nil && merged["maxPods"] == float64(500)
		}, "maxPods 500 was never rendered for worker")
		assert.Equal(t, []any{"172.30.0.10"}, merged["clusterDNS"], "the template's clusterDNS kept")
		assert.Equal(t, "/etc/kubernetes/manifests", merged["staticPodPath"])

		require.NoError(t, c.Delete(ctx, kc))
		controllertest.Eventually(t, func() bool { return renderedConf() == templateConf }, "the template's kubelet.conf was never rendered again")
	})

	t.Run("another ControllerConfig is ignored, and says so", func(t *testing.T) {
		other := &mcfgv1.ControllerConfig{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Spec: mcfgv1.ControllerConfigSpec{ClusterDNSIP: "10.0.0.10"}}
		require.NoError(t, c.Create(ctx, other))
		var cond *metav1.Condition
		controllertest.Eventually(t, func() bool {
			got := &mcfgv1.ControllerConfig{}
			cond = nil
			if c.Get(ctx, client.ObjectKeyFromObject(other), got) == nil {
				cond = meta.FindStatusCondition(got.Status.Conditions, mcfgv1.TemplateControllerFailing)
			}
			return cond != nil && cond.Status == metav1.ConditionTrue
		}, "the other ControllerConfig never failed")
		assert.Contains(t, cond.Message, "only the ControllerConfig named machine-config-controller is read")
	})
}

// waitMC waits until the MachineConfig name exists, and returns it.
func waitMC(t *testing.T, c client.Client, name string) *mcfgv1.MachineConfig {
	t.Helper()
	return controllertest.WaitObject(t, c, client.ObjectKey{Name: name}, "been written", func(*mcfgv1.MachineConfig) bool { return true })
}

// waitCondition waits until the ControllerConfig's condition typ is True,
// and returns it.
func waitCondition(t *testing.T, c client.Client, typ string) *metav1.Condition {
	t.Helper()
	cc := controllertest.WaitObject(t, c, client.ObjectKey{Name: mcfgv1.ControllerConfigName}, "condition "+typ+" True",
		func(cc *mcfgv1.ControllerConfig) bool { return meta.IsStatusConditionTrue(cc.Status.Conditions, typ) })
	return meta.FindStatusCondition(cc.Status.Conditions, typ)
}

func fileData(t *testing.T, mc *mcfgv1.MachineConfig, path string) string {
	t.Helper()
	ign, err := mcfgv1.ParseIgnition(mc.Spec.Config.Raw)
	require.NoError(t, err)
	i := slices.IndexFunc(ign.Storage.Files, func(f mcfgv1.IgnitionFile) bool { return f.Path == path })
	require.GreaterOrEqual(t, i, 0, "%s has no file %s", mc.Name, path)
	data, err := ign.Storage.Files[i].Data()
	require.NoError(t, err)
	return string(data)
}

func unitContents(t *testing.T, mc *mcfgv1.MachineConfig, name string) string {
	t.Helper()
	var cfg struct {
		Systemd struct {
			Units []struct {
				Name     string `json:"name"`
				Enabled  *bool  `json:"enabled"`
				Contents string `json:"contents"`
			} `json:"units"`
		} `json:"systemd"`
	}
	require.NoError(t, json.Unmarshal(mc.Spec.Config.Raw, &cfg))
	for _, u := range cfg.Systemd.Units {
		if u.Name == name {
			assert.True(t, u.Enabled != nil && *u.Enabled, "%s is enabled", name)
			return u.Contents
		}
	}
	t.Fatalf("%s has no unit %s", mc.Name, name)
	return ""
}

func kubeletConf(t *testing.T, mc *mcfgv1.MachineConfig) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(fileData(t, mc, mcfgv1.KubeletConfigPath)), &m))
	return m
}
