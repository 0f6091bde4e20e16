package mcruntime_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcfgv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
	"github.com/machina-io/machina/core/internal/controller/controllertest"
	"github.com/machina-io/machina/core/internal/controller/mcrender"
	"github.com/machina-io/machina/core/internal/controller/mcruntime"
	"github.com/machina-io/machina/core/internal/controller/mctemplate"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/testenv"
)

// TestContainerRuntimeConfig runs the ContainerRuntimeConfig, template and
// render controllers against a real API server: a ContainerRuntimeConfig
// becomes CRI-O drop-ins in the pool's rendered configuration, and its
// deletion takes them out again.
func TestContainerRuntimeConfig(t *testing.T) {
	env := testenv.Start(t)
	controllertest.StartManager(t, env, func(mgr ctrl.Manager) error {
		if err := (&mcrender.Reconciler{}).SetupWithManager(mgr, setup.Env{Target: mgr, Workers: 1}); err != nil {
			return err
		}
		if err := (&mctemplate.Reconciler{}).SetupWithManager(mgr, setup.Env{Target: mgr, Workers: 1}); err != nil {
			return err
		}
		return (&mcruntime.Reconciler{}).SetupWithManager(mgr, setup.Env{Target: mgr, Workers: 1})
	})
	c := env.Client
	ctx := t.Context()
	require.NoError(t, c.Create(ctx, &mcfgv1.ControllerConfig{
		ObjectMeta: metav1.ObjectMeta{Name: mcfgv1.ControllerConfigName},
		Spec:       mcfgv1.ControllerConfigSpec{ClusterDNSIP: "172.30.0.10"},
	}))
	workerSelector := &metav1.LabelSelector{MatchLabels: map[string]string{mcfgv1.PoolOperatorLabelPrefix + "worker": ""}}

	rendered := func() (*mcfgv1.MachineConfigPool, *mcfgv1.MachineConfig) {
		p := &mcfgv1.MachineConfigPool{}
		mc := &mcfgv1.MachineConfig{}
		if c.Get(ctx, client.ObjectKey{Name: "worker"}, p) != nil || p.Spec.Configuration.Name == "" ||
			c.Get(ctx, client.ObjectKey{Name: p.Spec.Configuration.Name}, mc) != nil {
			return nil, nil
		}
		return p, mc
	}

	t.Run("rendered into the pool", func(t *testing.T) {
		size := resource.MustParse("64Mi")
		crc := &mcfgv1.ContainerRuntimeConfig{
			ObjectMeta: metav1.ObjectMeta{Name: "set-pids"},
			Spec: mcfgv1.ContainerRuntimeConfigSpec{
				MachineConfigPoolSelector: workerSelector,
				ContainerRuntimeConfig:    &mcfgv1.ContainerRuntimeConfiguration{PidsLimit: ptr.To[int64](2048), LogSizeMax: &size},
			},
		}
		require.NoError(t, c.Create(ctx, crc))
		cond := waitCondition(t, c, "set-pids", mcfgv1.ContainerRuntimeConfigSuccess)
		assert.Equal(t, "Wrote 99-worker-generated-containerruntime", cond.Message)

		mc := &mcfgv1.MachineConfig{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "99-worker-generated-containerruntime"}, mc))
		assert.Equal(t, "ContainerRuntimeConfig", metav1.GetControllerOf(mc).Kind)
		var r *mcfgv1.MachineConfig
		controllertest.Eventually(t, func() bool {
			var p *mcfgv1.MachineConfigPool
			p, r = rendered()
			return p != nil && slices.ContainsFunc(p.Spec.Configuration.Source, func(s corev1.ObjectReference) bool {
				return s.Name == "99-worker-generated-containerruntime"
			})
		}, "worker never rendered 99-worker-generated-containerruntime")
		assert.Equal(t, "[crio.runtime]\npids_limit = 2048\n", fileData(t, r, "/etc/crio/crio.conf.d/01-ctrcfg-pidsLimit"))
		assert.Equal(t, "[crio.runtime]\nlog_size_max = 67108864\n", fileData(t, r, "/etc/crio/crio.conf.d/01-ctrcfg-logSizeMax"))
		assert.NotEmpty(t, fileData(t, r, mcfgv1.KubeletConfigPath), "merged with the template's configs")
	})

	t.Run("a second one for the pool takes -1 and overrides the same field", func(t *testing.T) {
		require.NoError(t, c.Create(ctx, &mcfgv1.ContainerRuntimeConfig{
			ObjectMeta: metav1.ObjectMeta{Name: "more-pids"},
			Spec: mcfgv1.ContainerRuntimeConfigSpec{
				MachineConfigPoolSelector: workerSelector,
				ContainerRuntimeConfig:    &mcfgv1.ContainerRuntimeConfiguration{PidsLimit: ptr.To[int64](4096), DefaultRuntime: "crun"},
			},
		}))
		waitCondition(t, c, "more-pids", mcfgv1.ContainerRuntimeConfigSuccess)
		controllertest.Eventually(t, func() bool {
			_, r := rendered()
			return r != nil && hasFile(r, "/etc/crio/crio.conf.d/01-ctrcfg-defaultRuntime") &&
				fileData(t, r, "/etc/crio/crio.conf.d/01-ctrcfg-pidsLimit") == "[crio.runtime]\npids_limit = 4096\n"
		}, "the later ContainerRuntimeConfig never won")
	})

	t.Run("invalid ones are refused with the reason", func(t *testing.T) {
		for name, cfg := range map[string]*mcfgv1.ContainerRuntimeConfiguration{
			"pids":  {PidsLimit: ptr.To[int64](5)},
			"level": {LogLevel: "loud"},
		} {
			require.NoError(t, c.Create(ctx, &mcfgv1.ContainerRuntimeConfig{
				ObjectMeta: metav1.ObjectMeta{Name: "bad-" + name},
				Spec:       mcfgv1.ContainerRuntimeConfigSpec{MachineConfigPoolSelector: workerSelector, ContainerRuntimeConfig: cfg},
			}))
		}
		assert.Contains(t, waitCondition(t, c, "bad-pids", mcfgv1.ContainerRuntimeConfigFailure).Message, "pidsLimit 5: must be -1 or 0 (no limit) or at least 20")
		assert.Contains(t, waitCondition(t, c, "bad-level", mcfgv1.ContainerRuntimeConfigFailure).Message, `logLevel "loud"`)
		crc := &mcfgv1.ContainerRuntimeConfig{ObjectMeta: metav1.ObjectMeta{Name: "bad-pids"}}
		controllertest.RequireEvent(t, c, crc, mcruntime.ReasonFailed, "pidsLimit 5")
	})

	t.Run("deletion takes its drop-ins out of the rendering", func(t *testing.T) {
		for _, name := range []string{"set-pids", "more-pids"} {
			require.NoError(t, c.Delete(ctx, &mcfgv1.ContainerRuntimeConfig{ObjectMeta: metav1.ObjectMeta{Name: name}}))
		}
		controllertest.Eventually(t, func() bool {
			_, r := rendered()
			return r != nil && !hasFile(r, "/etc/crio/crio.conf.d/01-ctrcfg-pidsLimit") &&
				apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Name: "99-worker-generated-containerruntime"}, &mcfgv1.MachineConfig{}))
		}, "the drop-ins were never taken out")
	})
}

// waitCondition waits until the ContainerRuntimeConfig's condition typ is
// True, and returns it.
func waitCondition(t *testing.T, c client.Client, name, typ string) *metav1.Condition {
	t.Helper()
	crc := controllertest.WaitObject(t, c, client.ObjectKey{Name: name}, "condition "+typ+" True",
		func(crc *mcfgv1.ContainerRuntimeConfig) bool {
			return meta.IsStatusConditionTrue(crc.Status.Conditions, typ)
		})
	return meta.FindStatusCondition(crc.Status.Conditions, typ)
}

func hasFile(mc *mcfgv1.MachineConfig, path string) bool {
	ign, err := mcfgv1.ParseIgnition(mc.Spec.Config.Raw)
	return err == nil && slices.ContainsFunc(ign.Storage.Files, func(f mcfgv1.IgnitionFile) bool { return f.Path == path })
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
