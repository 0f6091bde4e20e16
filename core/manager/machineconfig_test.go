package manager

import (
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcfgv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
	"github.com/machina-io/machina/core/testenv"
)

// TestMachineConfigControllers runs the manager against a target cluster
// that serves the machineconfiguration.openshift.io CRDs: a pool's
// MachineConfig and a KubeletConfig end up in the pool's rendered
// configuration. (TestManager's target serves none: there the controllers
// stay off and the manager runs all the same.)
func TestMachineConfigControllers(t *testing.T) {
	logTo(t)
	env := testenv.Start(t)
	_, endpoint := startTestDriver(t)
	opts := DefaultOptions()
	opts.ControlConfig = env.Config
	opts.TargetConfig = env.Config
	opts.Namespace = "default"
	opts.DriverEndpoint = endpoint
	opts.LeaderElect = false
	opts.MetricsBindAddress = "0"
	opts.HealthProbeBindAddress = "0"
	opts.skipNameValidation = true
	runManager(t, opts)

	c := env.Client
	pool := &mcfgv1.MachineConfigPool{
		ObjectMeta: metav1.ObjectMeta{Name: "infra", Labels: map[string]string{"kubelet": "infra"}},
		Spec: mcfgv1.MachineConfigPoolSpec{
			MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{mcfgv1.RoleLabel: "infra"}},
			NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/infra": ""}},
		},
	}
	require.NoError(t, c.Create(t.Context(), pool))
	// The template controller's base configuration: a KubeletConfig merges
	// over its kubelet.conf (without one it is refused).
	require.NoError(t, c.Create(t.Context(), &mcfgv1.ControllerConfig{
		ObjectMeta: metav1.ObjectMeta{Name: mcfgv1.ControllerConfigName},
		Spec:       mcfgv1.ControllerConfigSpec{ClusterDNSIP: "10.96.0.10"},
	}))
	require.NoError(t, c.Create(t.Context(), &mcfgv1.MachineConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "50-infra-motd", Labels: map[string]string{mcfgv1.RoleLabel: "infra"}},
		Spec: mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: []byte(
			`{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/etc/motd","contents":{"source":"data:,infra%0A"}}]}}`)}},
	}))
	require.NoError(t, c.Create(t.Context(), &mcfgv1.KubeletConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "infra-pods"},
		Spec: mcfgv1.KubeletConfigSpec{
			MachineConfigPoolSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubelet": "infra"}},
			KubeletConfig:             &runtime.RawExtension{Raw: []byte(`{"maxPods":300}`)},
		},
	}))

	want := []string{"01-infra-kubelet", "50-infra-motd", "99-infra-generated-kubelet"}
	require.Eventually(t, func() bool {
		got := &mcfgv1.MachineConfigPool{}
		if c.Get(t.Context(), client.ObjectKeyFromObject(pool), got) != nil || len(got.Spec.Configuration.Source) != len(want) {
			return false
		}
		for i, s := range got.Spec.Configuration.Source {
			if s.Name != want[i] {
				return false
			}
		}
		return c.Get(t.Context(), client.ObjectKey{Name: got.Spec.Configuration.Name}, &mcfgv1.MachineConfig{}) == nil
	}, waitFor, tick, "the pool was never rendered from %v", want)
}
