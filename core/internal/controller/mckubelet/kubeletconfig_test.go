package mckubelet_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcfgv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
	"github.com/machina-io/machina/core/internal/controller/controllertest"
	"github.com/machina-io/machina/core/internal/controller/mckubelet"
	"github.com/machina-io/machina/core/internal/controller/mcrender"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/internal/mcfg"
	"github.com/machina-io/machina/core/testenv"
)

// TestKubeletConfig runs the KubeletConfig and render controllers against a
// real API server: a KubeletConfig ends up in the pool's rendered
// configuration.
func TestKubeletConfig(t *testing.T) {
	env := testenv.Start(t)
	controllertest.StartManager(t, env, func(mgr ctrl.Manager) error {
		if err := (&mcrender.Reconciler{}).SetupWithManager(mgr, setup.Env{Target: mgr, Workers: 1}); err != nil {
			return err
		}
		return (&mckubelet.Reconciler{}).SetupWithManager(mgr, setup.Env{Target: mgr, Workers: 1})
	})
	c := env.Client
	ctx := t.Context()

	// A pool whose own MachineConfigs carry a kubelet configuration (YAML,
	// as OpenShift's templates write it).
	pool := &mcfgv1.MachineConfigPool{
		ObjectMeta: metav1.ObjectMeta{Name: "kube", Labels: map[string]string{"custom-kubelet": "large-pods"}},
		Spec: mcfgv1.MachineConfigPoolSpec{
			MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{mcfgv1.RoleLabel: "kube"}},
			NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "kube"}},
		},
	}
	require.NoError(t, c.Create(ctx, pool))
	base := "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupDriver: systemd\nmaxPods: 110\n" +
		"clusterDNS:\n- 172.30.0.10\nevictionHard:\n  imagefs.available: 15%\n  memory.available: 100Mi\n"
	require.NoError(t, c.Create(ctx, baseMachineConfig("kube", base)))

	t.Run("applied end to end", func(t *testing.T) {
		kc := kubeletConfig("max-pods", map[string]string{"custom-kubelet": "large-pods"},
			`{"maxPods":250,"evictionHard":{"memory.available":"200Mi"}}`)
		level := int32(4)
		kc.Spec.LogLevel = &level
		require.NoError(t, c.Create(ctx, kc))
		cond := waitCondition(t, c, "max-pods", mcfgv1.KubeletConfigSuccess, metav1.ConditionTrue)
		assert.Contains(t, cond.Message, "99-kube-generated-kubelet")
		assert.Equal(t, metav1.ConditionFalse, condition(t, c, "max-pods", mcfgv1.KubeletConfigFailure).Status)

		mc := &mcfgv1.MachineConfig{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "99-kube-generated-kubelet"}, mc))
		assert.Equal(t, "kube", mc.Labels[mcfgv1.RoleLabel])
		assert.Equal(t, mcfg.DefaultControllerVersion, mc.Annotations[mcfgv1.GeneratedByControllerVersionAnnotation])
		owner := metav1.GetControllerOf(mc)
		require.NotNil(t, owner)
		assert.Equal(t, "KubeletConfig", owner.Kind)
		assert.Equal(t, "max-pods", owner.Name)
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(kc), kc))
		assert.Equal(t, "", kc.Annotations[mcfgv1.MCNameSuffixAnnotation])
		assert.Contains(t, kc.Finalizers, mcfgv1.KubeletConfigFinalizer)

		// The pool's rendering carries the merged kubelet configuration.
		p := &mcfgv1.MachineConfigPool{}
		controllertest.Eventually(t, func() bool {
			return c.Get(ctx, client.ObjectKeyFromObject(pool), p) == nil &&
				slices.ContainsFunc(p.Spec.Configuration.Source, func(r corev1.ObjectReference) bool { return r.Name == "99-kube-generated-kubelet" })
		}, "the pool's rendering never included 99-kube-generated-kubelet")
		rendered := &mcfgv1.MachineConfig{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Name: p.Spec.Configuration.Name}, rendered))
		got := kubeletConf(t, rendered)
		assert.Equal(t, float64(250), got["maxPods"], "the user's value")
		assert.Equal(t, "systemd", got["cgroupDriver"], "the pool's value")
		assert.Equal(t, []any{"172.30.0.10"}, got["clusterDNS"], "the pool's value")
		assert.Equal(t, map[string]any{"imagefs.available": "15%", "memory.available": "200Mi"}, got["evictionHard"], "merged field by field")
		assert.Equal(t, "[Service]\nEnvironment=\"KUBELET_LOG_LEVEL=4\"\n",
			fileData(t, rendered, "/etc/systemd/system/kubelet.service.d/20-logging.conf"))
	})

	t.Run("a second KubeletConfig takes the next suffix", func(t *testing.T) {
		require.NoError(t, c.Create(ctx, kubeletConfig("pods-per-core", map[string]string{"custom-kubelet": "large-pods"}, `{"podsPerCore":10}`)))
		waitCondition(t, c, "pods-per-core", mcfgv1.KubeletConfigSuccess, metav1.ConditionTrue)
		mc := &mcfgv1.MachineConfig{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "99-kube-generated-kubelet-1"}, mc))
		assert.Equal(t, float64(10), kubeletConf(t, mc)["podsPerCore"])
	})

	t.Run("refused fields fail with the field named", func(t *testing.T) {
		kc := kubeletConfig("refused", map[string]string{"custom-kubelet": "large-pods"}, `{"clusterDNS":["10.0.0.10"],"cgroupDriver":"cgroupfs"}`)
		require.NoError(t, c.Create(ctx, kc))
		cond := waitCondition(t, c, "refused", mcfgv1.KubeletConfigFailure, metav1.ConditionTrue)
		assert.Equal(t, "spec.kubeletConfig may not set cgroupDriver, clusterDNS: the controller manages them", cond.Message)
		assert.Equal(t, metav1.ConditionFalse, condition(t, c, "refused", mcfgv1.KubeletConfigSuccess).Status)
		controllertest.RequireEvent(t, c, kc, mckubelet.ReasonFailed, "cgroupDriver")
	})

	t.Run("an empty pool selector fails", func(t *testing.T) {
		require.NoError(t, c.Create(ctx, kubeletConfig("no-pool", nil, `{"maxPods":10}`)))
		cond := waitCondition(t, c, "no-pool", mcfgv1.KubeletConfigFailure, metav1.ConditionTrue)
		assert.Contains(t, cond.Message, "selects no pool")
	})

	t.Run("deleting a KubeletConfig deletes its MachineConfig", func(t *testing.T) {
		kc := &mcfgv1.KubeletConfig{ObjectMeta: metav1.ObjectMeta{Name: "pods-per-core"}}
		require.NoError(t, c.Delete(ctx, kc))
		controllertest.Eventually(t, func() bool {
			return apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Name: "99-kube-generated-kubelet-1"}, &mcfgv1.MachineConfig{})) &&
				apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(kc), kc))
		}, "the KubeletConfig or its MachineConfig was never deleted")
		// The pool renders without it.
		p := &mcfgv1.MachineConfigPool{}
		controllertest.Eventually(t, func() bool {
			return c.Get(ctx, client.ObjectKeyFromObject(pool), p) == nil &&
				!slices.ContainsFunc(p.Spec.Configuration.Source, func(r corev1.ObjectReference) bool { return r.Name == "99-kube-generated-kubelet-1" })
		}, "the pool's rendering still includes 99-kube-generated-kubelet-1")
	})

	t.Run("deleting every KubeletConfig renders the base kubelet.conf again", func(t *testing.T) {
		require.NoError(t, c.Create(ctx, baseMachineConfig("restore", base)))
		restore := &mcfgv1.MachineConfigPool{
			ObjectMeta: metav1.ObjectMeta{Name: "restore", Labels: map[string]string{"custom-kubelet": "restore"}},
			Spec: mcfgv1.MachineConfigPoolSpec{
				MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{mcfgv1.RoleLabel: "restore"}},
			},
		}
		require.NoError(t, c.Create(ctx, restore))
		renderedKubeletConf := func() string {
			p := &mcfgv1.MachineConfigPool{}
			rendered := &mcfgv1.MachineConfig{}
			if c.Get(ctx, client.ObjectKeyFromObject(restore), p) != nil || p.Spec.Configuration.Name == "" ||
				c.Get(ctx, client.ObjectKey{Name: p.Spec.Configuration.Name}, rendered) != nil {
				return ""
			}
			return fileData(t, rendered, mcfgv1.KubeletConfigPath)
		}
		controllertest.Eventually(t, func() bool { return renderedKubeletConf() == base }, "the pool never rendered its base kubelet.conf")

		kc := kubeletConfig("restore-pods", map[string]string{"custom-kubelet": "restore"}, `{"maxPods":300}`)
		require.NoError(t, c.Create(ctx, kc))
		controllertest.Eventually(t, func() bool { return strings.Contains(renderedKubeletConf(), `"maxPods": 300`) }, "maxPods 300 was never rendered")
		assert.Contains(t, renderedKubeletConf(), "172.30.0.10", "clusterDNS kept")

		require.NoError(t, c.Delete(ctx, kc))
		controllertest.Eventually(t, func() bool { return renderedKubeletConf() == base }, "the base kubelet.conf was never rendered again")
	})

	t.Run("suffixes count per pool", func(t *testing.T) {
		require.NoError(t, c.Create(ctx, baseMachineConfig("infra", base)))
		require.NoError(t, c.Create(ctx, &mcfgv1.MachineConfigPool{
			ObjectMeta: metav1.ObjectMeta{Name: "infra", Labels: map[string]string{"custom-kubelet": "infra"}},
			Spec: mcfgv1.MachineConfigPoolSpec{
				MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{mcfgv1.RoleLabel: "infra"}},
			},
		}))
		// kube has 99-kube-generated-kubelet (max-pods) already.
		yes := true
		kc := kubeletConfig("infra-sizing", map[string]string{"custom-kubelet": "infra"}, "")
		kc.Spec.AutoSizingReserved = &yes
		require.NoError(t, c.Create(ctx, kc))
		waitCondition(t, c, "infra-sizing", mcfgv1.KubeletConfigSuccess, metav1.ConditionTrue)
		mc := &mcfgv1.MachineConfig{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "99-infra-generated-kubelet"}, mc), "the first of pool infra has no suffix")
		assert.Equal(t, "NODE_SIZING_ENABLED=true\nSYSTEM_RESERVED_MEMORY=1Gi\nSYSTEM_RESERVED_CPU=500m\nSYSTEM_RESERVED_ES=1Gi\n",
			fileData(t, mc, mckubelet.NodeSizingEnvPath), "autoSizingReserved alone is applied: MCO's node-sizing file")
		assert.Equal(t, float64(110), kubeletConf(t, mc)["maxPods"], "the base, unchanged")

		tls := kubeletConfig("infra-tls", map[string]string{"custom-kubelet": "infra"}, "")
		tls.Spec.TLSSecurityProfile = &runtime.RawExtension{Raw: []byte(`{"type":"Old","old":{}}`)}
		require.NoError(t, c.Create(ctx, tls))
		waitCondition(t, c, "infra-tls", mcfgv1.KubeletConfigSuccess, metav1.ConditionTrue)
		require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "99-infra-generated-kubelet-1"}, mc), "the next of pool infra takes -1")
		assert.Equal(t, "VersionTLS10", kubeletConf(t, mc)["tlsMinVersion"], "tlsSecurityProfile alone is applied")
	})

	t.Run("invalid KubeletConfigs are refused with the reason", func(t *testing.T) {
		yes := true
		for name, tc := range map[string]struct {
			config, tls string
			autoSizing  *bool
			pool        string
			want        string
		}{
			"lots":      {config: `{"maxPods":"lots"}`, want: "KubeletConfiguration.maxPods of type int32"},
			"misspelt":  {config: `{"maxPod":10}`, want: `unknown field "maxPod"`},
			"exclusive": {config: `{"systemReserved":{"cpu":"1"}}`, autoSizing: &yes, want: "spec.autoSizingReserved and spec.kubeletConfig.systemReserved cannot be set together"},
			"bogus-tls": {tls: `{"type":"Bogus"}`, want: `spec.tlsSecurityProfile.type "Bogus" is not one of Old, Intermediate, Modern, Custom`},
			"no-base":   {config: `{"maxPods":10}`, pool: "bare", want: "pool bare has no base kubelet configuration: none of its MachineConfigs writes /etc/kubernetes/kubelet.conf"},
		} {
			if tc.pool == "" {
				tc.pool = "large-pods"
			}
			kc := kubeletConfig("invalid-"+name, map[string]string{"custom-kubelet": tc.pool}, tc.config)
			kc.Spec.AutoSizingReserved = tc.autoSizing
			if tc.tls != "" {
				kc.Spec.TLSSecurityProfile = &runtime.RawExtension{Raw: []byte(tc.tls)}
			}
			if tc.pool == "bare" {
				require.NoError(t, c.Create(ctx, &mcfgv1.MachineConfigPool{
					ObjectMeta: metav1.ObjectMeta{Name: "bare", Labels: map[string]string{"custom-kubelet": "bare"}},
					Spec: mcfgv1.MachineConfigPoolSpec{
						MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{mcfgv1.RoleLabel: "bare"}},
					},
				}))
			}
			require.NoError(t, c.Create(ctx, kc))
			cond := waitCondition(t, c, kc.Name, mcfgv1.KubeletConfigFailure, metav1.ConditionTrue)
			assert.Contains(t, cond.Message, tc.want, name)
			assert.Equal(t, metav1.ConditionFalse, condition(t, c, kc.Name, mcfgv1.KubeletConfigSuccess).Status, name)
		}
		assert.True(t, apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Name: "99-bare-generated-kubelet"}, &mcfgv1.MachineConfig{})),
			"nothing written for a pool without a base")
	})

	t.Run("a pool it no longer selects loses its MachineConfig", func(t *testing.T) {
		other := &mcfgv1.MachineConfigPool{
			ObjectMeta: metav1.ObjectMeta{Name: "kube2", Labels: map[string]string{"custom-kubelet": "large-pods"}},
			Spec: mcfgv1.MachineConfigPoolSpec{
				MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{mcfgv1.RoleLabel: "kube2"}},
			},
		}
		require.NoError(t, c.Create(ctx, other))
		require.NoError(t, c.Create(ctx, baseMachineConfig("kube2", base)))
		exists := func(name string) bool {
			return c.Get(ctx, client.ObjectKey{Name: name}, &mcfgv1.MachineConfig{}) == nil
		}
		controllertest.Eventually(t, func() bool { return exists("99-kube2-generated-kubelet") }, "max-pods never wrote 99-kube2-generated-kubelet")

		require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(other), other); err != nil {
				return err
			}
			other.Labels = nil
			return c.Update(ctx, other)
		}))
		controllertest.Eventually(t, func() bool { return !exists("99-kube2-generated-kubelet") }, "99-kube2-generated-kubelet was never deleted")
		assert.True(t, exists("99-kube-generated-kubelet"), "the pool still selected keeps its MachineConfig")
		// The status follows the deletion in the same sync.
		controllertest.Eventually(t, func() bool {
			return condition(t, c, "max-pods", mcfgv1.KubeletConfigSuccess).Message == "Wrote 99-kube-generated-kubelet"
		}, "max-pods's Success condition never stopped naming 99-kube2-generated-kubelet")
	})
}

// baseMachineConfig is a pool's base kubelet configuration, as the
// template controller's 01-<pool>-kubelet carries it (YAML).
func baseMachineConfig(pool, kubeletConf string) *mcfgv1.MachineConfig {
	return &mcfgv1.MachineConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "01-" + pool + "-kubelet", Labels: map[string]string{mcfgv1.RoleLabel: pool}},
		Spec: mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: []byte(
			`{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/etc/kubernetes/kubelet.conf","mode":420,"contents":{"source":"` +
				mcfgv1.DataURL([]byte(kubeletConf)) + `"}}]}}`)}},
	}
}

func kubeletConfig(name string, poolLabels map[string]string, config string) *mcfgv1.KubeletConfig {
	kc := &mcfgv1.KubeletConfig{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if config != "" {
		kc.Spec.KubeletConfig = &runtime.RawExtension{Raw: []byte(config)}
	}
	if poolLabels != nil {
		kc.Spec.MachineConfigPoolSelector = &metav1.LabelSelector{MatchLabels: poolLabels}
	}
	return kc
}

func condition(t *testing.T, c client.Client, name, typ string) *metav1.Condition {
	t.Helper()
	kc := &mcfgv1.KubeletConfig{}
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Name: name}, kc))
	cond := meta.FindStatusCondition(kc.Status.Conditions, typ)
	if cond == nil {
		return &metav1.Condition{}
	}
	return cond
}

// waitCondition waits until the KubeletConfig's condition typ has status,
// and returns it.
func waitCondition(t *testing.T, c client.Client, name, typ string, status metav1.ConditionStatus) *metav1.Condition {
	t.Helper()
	kc := controllertest.WaitObject(t, c, client.ObjectKey{Name: name}, "condition "+typ+" "+string(status),
		func(kc *mcfgv1.KubeletConfig) bool {
			return meta.IsStatusConditionPresentAndEqual(kc.Status.Conditions, typ, status)
		})
	return meta.FindStatusCondition(kc.Status.Conditions, typ)
}

func fileData(t *testing.T, mc *mcfgv1.MachineConfig, path string) string {
	t.Helper()
	ign, err := mcfgv1.ParseIgnition(mc.Spec.Config.Raw)
	require.NoError(t, err)
	for _, f := range ign.Storage.Files {
		if f.Path == path {
			data, err := f.Data()
			require.NoError(t, err)
			return string(data)
		}
	}
	t.Fatalf("%s has no file %s", mc.Name, path)
	return ""
}

func kubeletConf(t *testing.T, mc *mcfgv1.MachineConfig) map[string]any {
	t.Helper()
	var m map[string]any
	data := fileData(t, mc, mcfgv1.KubeletConfigPath)
	require.NoError(t, json.Unmarshal([]byte(data), &m), data)
	assert.True(t, strings.HasSuffix(data, "\n"))
	return m
}
