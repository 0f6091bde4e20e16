package mcrender_test

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	mcfgv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
	"github.com/machina-io/machina/core/internal/controller/controllertest"
	"github.com/machina-io/machina/core/internal/controller/mcgc"
	"github.com/machina-io/machina/core/internal/controller/mcrender"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/internal/mcfg"
	"github.com/machina-io/machina/core/testenv"
)

// gcGrace is the collector's grace in these tests: short, so that a
// rendering the collector took for unused would go while the test runs.
const gcGrace = 2 * time.Second

// TestRender runs the render controller against a real API server, with
// the collector (mcgc, tested there) as in the manager: a rendering the
// collector deletes is one the render controller no longer needs.
func TestRender(t *testing.T) {
	env := testenv.Start(t)
	controllertest.StartManager(t, env, func(mgr ctrl.Manager) error {
		if err := (&mcrender.Reconciler{}).SetupWithManager(mgr, setup.Env{Target: mgr, Workers: 2}); err != nil {
			return err
		}
		return (&mcgc.Collector{Grace: gcGrace}).SetupWithManager(mgr, setup.Env{Target: mgr, Workers: 1})
	})
	c := env.Client

	t.Run("an OpenShift MachineConfig renders unchanged", func(t *testing.T) { testOpenShiftExample(t, c) })
	t.Run("merge order and hash do not depend on creation order", func(t *testing.T) { testCreationOrder(t, c) })
	t.Run("a bad fragment keeps the last good rendering", func(t *testing.T) { testBadFragment(t, c) })
	t.Run("a selector change renders again", func(t *testing.T) { testSelectorChange(t, c) })
	t.Run("a pool created again adopts its rendering", func(t *testing.T) { testAdopt(t, c) })
	t.Run("a day-2 FIPS change is refused", func(t *testing.T) { testFIPSChange(t, c) })
	t.Run("an unsupported extension is refused", func(t *testing.T) { testExtensions(t, c) })
	t.Run("64k-pages on a node that is not arm64 is refused", func(t *testing.T) { testKernel64k(t, c) })
	t.Run("an Ignition 2.2 SSH-key MachineConfig renders as 3.x", func(t *testing.T) { testIgnition22(t, c) })
}

// testIgnition22 applies MCO's docs/Update-SSHKeys.md example as its
// earlier revisions wrote it (Ignition 2.2.0), with a 2.2 file on
// filesystem root: the rendering is Ignition 3.5.0 with the keys and the
// file, and no spec 2 key.
func testIgnition22(t *testing.T, c client.Client) {
	var ssh mcfgv1.MachineConfig
	require.NoError(t, yaml.Unmarshal([]byte(`
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  labels:
    machineconfiguration.openshift.io/role: ign22
  name: ssh-workers-01
spec:
  config:
    ignition:
      version: 2.2.0
    passwd:
      users:
      - name: core
        sshAuthorizedKeys:
        - ssh-rsa ABC123....
        - ssh-rsa XYZ7890....
`), &ssh))
	require.NoError(t, c.Create(t.Context(), &ssh))
	require.NoError(t, c.Create(t.Context(), fragment("50-ign22-file", "ign22",
		`{"ignition":{"version":"2.2.0"},"storage":{"files":[{"filesystem":"root","path":"/etc/ign22","mode":420,"contents":{"source":"data:,spec2"}}]}}`)))
	require.NoError(t, c.Create(t.Context(), pool("ign22", "ign22")))

	p := target(t, c, "ign22", "")
	assert.Equal(t, []string{"50-ign22-file", "ssh-workers-01"}, sourceNames(p))
	mc, ign := renderedIgnition(t, c, p.Spec.Configuration.Name)
	assert.NotContains(t, string(mc.Spec.Config.Raw), `"filesystem"`)
	assert.Contains(t, string(mc.Spec.Config.Raw), `"version":"3.5.0"`)
	assert.Equal(t, mcfgv1.IgnitionVersion, ign.Ignition.Version)
	require.Len(t, ign.Passwd.Users, 1)
	assert.Equal(t, []string{"ssh-rsa ABC123....", "ssh-rsa XYZ7890...."}, ign.Passwd.Users[0].SSHAuthorizedKeys)
	assert.Equal(t, "spec2", fileData(t, ign, "/etc/ign22"))
	controllertest.Eventually(t, func() bool {
		cond := renderDegraded(t, c, "ign22")
		return cond != nil && cond.Status == metav1.ConditionFalse
	}, "RenderDegraded never became False")
}

func pool(name string, roles ...string) *mcfgv1.MachineConfigPool {
	return &mcfgv1.MachineConfigPool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: mcfgv1.MachineConfigPoolSpec{
			MachineConfigSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: mcfgv1.RoleLabel, Operator: metav1.LabelSelectorOpIn, Values: roles},
			}},
			NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": name}},
		},
	}
}

func fragment(name, role, config string) *mcfgv1.MachineConfig {
	return &mcfgv1.MachineConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{mcfgv1.RoleLabel: role}},
		Spec:       mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: []byte(config)}},
	}
}

func fileConfig(path, content string) string {
	return `{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"` + path + `","mode":420,"contents":{"source":"` +
		mcfgv1.DataURL([]byte(content)) + `"}}]}}`
}

// target waits until the pool's target differs from not (and is set), and
// returns it.
func target(t *testing.T, c client.Client, name, not string) *mcfgv1.MachineConfigPool {
	t.Helper()
	p := &mcfgv1.MachineConfigPool{}
	controllertest.Eventually(t, func() bool {
		return c.Get(t.Context(), client.ObjectKey{Name: name}, p) == nil &&
			p.Spec.Configuration.Name != "" && p.Spec.Configuration.Name != not
	}, "pool %s never got a target other than %q", name, not)
	return p
}

func renderedIgnition(t *testing.T, c client.Client, name string) (*mcfgv1.MachineConfig, *mcfgv1.Ignition) {
	t.Helper()
	mc := &mcfgv1.MachineConfig{}
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Name: name}, mc))
	ign, err := mcfgv1.ParseIgnition(mc.Spec.Config.Raw)
	require.NoError(t, err)
	return mc, ign
}

func fileData(t *testing.T, ign *mcfgv1.Ignition, path string) string {
	t.Helper()
	for _, f := range ign.Storage.Files {
		if f.Path == path {
			data, err := f.Data()
			require.NoError(t, err)
			return string(data)
		}
	}
	t.Fatalf("rendered config has no file %s", path)
	return ""
}

// renderDegraded is the pool's RenderDegraded condition, nil when it has
// none or cannot be read (it runs inside require.Eventually's goroutine).
func renderDegraded(t *testing.T, c client.Client, name string) *metav1.Condition {
	t.Helper()
	p := &mcfgv1.MachineConfigPool{}
	if err := c.Get(t.Context(), client.ObjectKey{Name: name}, p); err != nil {
		t.Logf("reading pool %s: %v", name, err)
		return nil
	}
	return meta.FindStatusCondition(p.Status.Conditions, mcfgv1.PoolRenderDegraded)
}

func sourceNames(p *mcfgv1.MachineConfigPool) []string {
	var out []string
	for _, s := range p.Spec.Configuration.Source {
		out = append(out, s.Name)
	}
	return out
}

// testOpenShiftExample applies deploy/examples/machineconfig as a user
// would and checks the worker pool's rendered configuration.
func testOpenShiftExample(t *testing.T, c client.Client) {
	crds, err := testenv.CRDDir()
	require.NoError(t, err)
	files, err := filepath.Glob(filepath.Join(filepath.Dir(crds), "examples", "machineconfig", "*.yaml"))
	require.NoError(t, err)
	require.Len(t, files, 3)
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		obj := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal(data, &obj.Object))
		require.NoError(t, c.Create(t.Context(), obj), f)
	}

	p := target(t, c, "worker", "")
	assert.Regexp(t, `^rendered-worker-[0-9a-f]{32}$`, p.Spec.Configuration.Name)
	assert.Equal(t, []string{"99-worker-chrony", "99-worker-ssh"}, sourceNames(p))
	assert.Equal(t, "MachineConfig", p.Spec.Configuration.Source[0].Kind)

	mc, ign := renderedIgnition(t, c, p.Spec.Configuration.Name)
	assert.Equal(t, mcfgv1.IgnitionVersion, ign.Ignition.Version)
	assert.Equal(t, "server time.example.com iburst\n", fileData(t, ign, "/etc/chrony.d/example.conf"))
	assert.Equal(t, 0o644, ign.Storage.Files[0].FileMode())
	require.Len(t, ign.Systemd.Units, 1)
	assert.Equal(t, "example-hello.service", ign.Systemd.Units[0].Name)
	assert.True(t, *ign.Systemd.Units[0].Enabled)
	assert.Equal(t, []string{"nosmt"}, mc.Spec.KernelArguments)
	require.Len(t, ign.Passwd.Users, 1)
	assert.Equal(t, "core", ign.Passwd.Users[0].Name)
	assert.Len(t, ign.Passwd.Users[0].SSHAuthorizedKeys, 1)
	assert.Equal(t, mcfg.DefaultControllerVersion, mc.Annotations[mcfgv1.GeneratedByControllerVersionAnnotation])
	assert.Equal(t, "worker", mc.Annotations[mcfgv1.RenderedFromPoolAnnotation])
	owner := metav1.GetControllerOf(mc)
	require.NotNil(t, owner)
	assert.Equal(t, "MachineConfigPool", owner.Kind)
	assert.Equal(t, p.UID, owner.UID)

	controllertest.Eventually(t, func() bool {
		cond := renderDegraded(t, c, "worker")
		return cond != nil && cond.Status == metav1.ConditionFalse
	}, "RenderDegraded never became False")
}

// testCreationOrder creates the same fragments for two pools in opposite
// orders: the renderings are equal (their names differ only by the pool),
// and later names win per path.
func testCreationOrder(t *testing.T, c client.Client) {
	ctx := t.Context()
	contents := []struct{ name, config string }{
		{"10-order", fileConfig("/etc/order", "ten")},
		{"20-order", fileConfig("/etc/order", "twenty")},
		{"30-order", `{"ignition":{"version":"3.4.0"},"systemd":{"units":[{"name":"order.service","enabled":true,"contents":"[Unit]\n"}]}}`},
	}
	for _, poolName := range []string{"order-a", "order-b"} {
		require.NoError(t, c.Create(ctx, pool(poolName, poolName)))
	}
	for i := range contents {
		a := contents[i]
		b := contents[len(contents)-1-i]
		require.NoError(t, c.Create(ctx, fragment(a.name+"-a", "order-a", a.config)))
		require.NoError(t, c.Create(ctx, fragment(b.name+"-b", "order-b", b.config)))
	}
	var hashes []string
	for _, poolName := range []string{"order-a", "order-b"} {
		var p *mcfgv1.MachineConfigPool
		controllertest.Eventually(t, func() bool {
			p = target(t, c, poolName, "")
			return len(p.Spec.Configuration.Source) == 3
		}, "pool %s never rendered all three fragments", poolName)
		suffix := "-" + strings.TrimPrefix(poolName, "order-")
		assert.Equal(t, []string{"10-order" + suffix, "20-order" + suffix, "30-order" + suffix}, sourceNames(p))
		_, ign := renderedIgnition(t, c, p.Spec.Configuration.Name)
		assert.Equal(t, "twenty", fileData(t, ign, "/etc/order"))
		hashes = append(hashes, strings.TrimPrefix(p.Spec.Configuration.Name, "rendered-"+poolName+"-"))
	}
	assert.Equal(t, hashes[0], hashes[1])
}

// testBadFragment adds a fragment that cannot be rendered: the pool says
// which and why, and keeps its target; fixing it renders again.
func testBadFragment(t *testing.T, c client.Client) {
	ctx := t.Context()
	require.NoError(t, c.Create(ctx, pool("bad", "bad")))
	require.NoError(t, c.Create(ctx, fragment("10-bad-good", "bad", fileConfig("/etc/good", "good"))))
	good := target(t, c, "bad", "").Spec.Configuration.Name

	for _, tc := range []struct{ config, want string }{
		{`{"ignition":{"version":"2.4.0"}}`, `MachineConfig 20-bad-broken: unsupported Ignition version "2.4.0"`},
		{`{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/etc/m","mode":70000}]}}`, "MachineConfig 20-bad-broken: file /etc/m: invalid mode 70000"},
		{`{"ignition":{"version":"3.2.0"},"storage":{"links":[{"path":"/etc/good","target":"/x"}]}}`,
			"MachineConfig 20-bad-broken: not applicable to a running node: storage.links"},
		{`{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/etc/good","mode":420,"colour":"red"}]}}`,
			`MachineConfig 20-bad-broken: config is not an Ignition config: json: unknown field "colour"`},
		// What would fail on every node is refused before a node tries.
		{`{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/etc/d","contents":{"source":"data:,a"}},{"path":"/etc/d/x","contents":{"source":"data:,b"}}]}}`,
			"MachineConfig 20-bad-broken: storage.files[0] writes /etc/d, which storage.files[1] needs to be a directory for /etc/d/x"},
		{`{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/etc/a\u0000b"}]}}`, "path contains a NUL byte"},
		{`{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/etc/` + strings.Repeat("n", 256) + `"}]}}`, "more than Linux's 255"},
		{`{"ignition":{"version":"3.2.0"},"systemd":{"units":[{"name":"web","contents":"[Unit]\n"}]}}`, `unit "web": invalid name: no unit type suffix`},
		// Across fragments: the other fragment writes /etc/good as a file.
		{`{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/etc/good/x","contents":{"source":"data:,b"}}]}}`,
			"the rendered config is invalid: storage.files[0] writes /etc/good, which storage.files[1] needs to be a directory for /etc/good/x"},
	} {
		broken := &mcfgv1.MachineConfig{}
		err := c.Get(ctx, client.ObjectKey{Name: "20-bad-broken"}, broken)
		if apierrors.IsNotFound(err) {
			require.NoError(t, c.Create(ctx, fragment("20-bad-broken", "bad", tc.config)))
		} else {
			require.NoError(t, err)
			broken.Spec.Config.Raw = []byte(tc.config)
			require.NoError(t, c.Update(ctx, broken))
		}
		controllertest.Eventually(t, func() bool {
			cond := renderDegraded(t, c, "bad")
			return cond != nil && cond.Status == metav1.ConditionTrue && strings.Contains(cond.Message, tc.want)
		}, "RenderDegraded never said %q", tc.want)
		cond := renderDegraded(t, c, "bad")
		assert.Equal(t, "InvalidMachineConfig", cond.Reason)
		assert.Contains(t, cond.Message, "the pool keeps "+good)
		p := &mcfgv1.MachineConfigPool{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "bad"}, p))
		assert.Equal(t, good, p.Spec.Configuration.Name, "the last good rendering stays the target")
	}
	controllertest.RequireEvent(t, c, &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "bad"}},
		mcrender.ReasonRenderFailed, "20-bad-broken")

	// A rendering too large to store: refused with a condition, the pool
	// keeps its target (768 KiB of random data is 1 MiB in base64).
	big := make([]byte, 768<<10)
	_, _ = rand.Read(big)
	broken := &mcfgv1.MachineConfig{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "20-bad-broken"}, broken))
	broken.Spec.Config.Raw = []byte(`{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/etc/big","contents":{"source":"` +
		mcfgv1.DataURL(big) + `"}}]}}`)
	require.NoError(t, c.Update(ctx, broken))
	controllertest.Eventually(t, func() bool {
		cond := renderDegraded(t, c, "bad")
		return cond != nil && cond.Status == metav1.ConditionTrue && cond.Reason == "RenderedConfigTooLarge" &&
			strings.Contains(cond.Message, "more than the 1024 KiB a MachineConfig may hold")
	}, "RenderDegraded never said the rendering is too large")
	p := &mcfgv1.MachineConfigPool{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "bad"}, p))
	assert.Equal(t, good, p.Spec.Configuration.Name, "the last good rendering stays the target")

	// Fixed: a new rendering with both fragments.
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "20-bad-broken"}, broken))
	broken.Spec.Config.Raw = []byte(fileConfig("/etc/fixed", "fixed"))
	require.NoError(t, c.Update(ctx, broken))
	p = target(t, c, "bad", good)
	assert.Equal(t, []string{"10-bad-good", "20-bad-broken"}, sourceNames(p))
	_, ign := renderedIgnition(t, c, p.Spec.Configuration.Name)
	assert.Equal(t, "good", fileData(t, ign, "/etc/good"))
	assert.Equal(t, "fixed", fileData(t, ign, "/etc/fixed"))
	controllertest.Eventually(t, func() bool {
		cond := renderDegraded(t, c, "bad")
		return cond != nil && cond.Status == metav1.ConditionFalse
	}, "RenderDegraded never cleared")
}

// testSelectorChange points a pool at other fragments.
func testSelectorChange(t *testing.T, c client.Client) {
	ctx := t.Context()
	require.NoError(t, c.Create(ctx, fragment("10-sel-one", "sel-one", fileConfig("/etc/sel", "one"))))
	require.NoError(t, c.Create(ctx, fragment("10-sel-two", "sel-two", fileConfig("/etc/sel", "two"))))
	require.NoError(t, c.Create(ctx, pool("sel", "sel-one")))
	first := target(t, c, "sel", "")
	assert.Equal(t, []string{"10-sel-one"}, sourceNames(first))

	setRoles(t, c, "sel", "sel-two")
	second := target(t, c, "sel", first.Spec.Configuration.Name)
	assert.Equal(t, []string{"10-sel-two"}, sourceNames(second))
	_, ign := renderedIgnition(t, c, second.Spec.Configuration.Name)
	assert.Equal(t, "two", fileData(t, ign, "/etc/sel"))

	// A selector that selects nothing keeps the target and says so.
	setRoles(t, c, "sel", "nobody")
	controllertest.Eventually(t, func() bool {
		cond := renderDegraded(t, c, "sel")
		return cond != nil && cond.Status == metav1.ConditionTrue && cond.Reason == "NoMachineConfigs"
	}, "a selector selecting nothing never set RenderDegraded")
	p := &mcfgv1.MachineConfigPool{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "sel"}, p))
	assert.Equal(t, second.Spec.Configuration.Name, p.Spec.Configuration.Name)
}

// setRoles points the pool's selector at roles. The controller writes the
// pool too (its target, its status): a conflict is retried on a fresh read.
func setRoles(t *testing.T, c client.Client, name string, roles ...string) {
	t.Helper()
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p := &mcfgv1.MachineConfigPool{}
		if err := c.Get(t.Context(), client.ObjectKey{Name: name}, p); err != nil {
			return err
		}
		p.Spec.MachineConfigSelector.MatchExpressions[0].Values = roles
		return c.Update(t.Context(), p)
	}))
}

// testAdopt deletes a pool and creates it again: the rendering, the same
// content under the same name, becomes the new pool's.
func testAdopt(t *testing.T, c client.Client) {
	ctx := t.Context()
	require.NoError(t, c.Create(ctx, fragment("10-adopt", "adopt", fileConfig("/etc/adopt", "a"))))
	old := pool("adopt", "adopt")
	require.NoError(t, c.Create(ctx, old))
	name := target(t, c, "adopt", "").Spec.Configuration.Name
	rendered := &mcfgv1.MachineConfig{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: name}, rendered))
	require.NoError(t, c.Delete(ctx, old))
	controllertest.Eventually(t, func() bool {
		return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(old), &mcfgv1.MachineConfigPool{}))
	}, "the pool was never deleted")

	again := pool("adopt", "adopt")
	require.NoError(t, c.Create(ctx, again))
	require.NotEqual(t, old.UID, again.UID)
	assert.Equal(t, name, target(t, c, "adopt", "").Spec.Configuration.Name, "the same content, the same name")
	controllertest.Eventually(t, func() bool {
		mc := &mcfgv1.MachineConfig{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, mc); err != nil {
			return false
		}
		ref := metav1.GetControllerOf(mc)
		return mc.UID == rendered.UID && ref != nil && ref.UID == again.UID && len(mc.OwnerReferences) == 1
	}, "%s (the same object, not a new one) never became the new pool's", name)
}

// emptyConfig is the Ignition config of a fragment that sets only other
// fields of the spec.
const emptyConfig = `{"ignition":{"version":"3.2.0"}}`

// updateFragment changes a fragment's spec, retrying on conflicts.
func updateFragment(t *testing.T, c client.Client, name string, change func(*mcfgv1.MachineConfigSpec)) {
	t.Helper()
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		mc := &mcfgv1.MachineConfig{}
		if err := c.Get(t.Context(), client.ObjectKey{Name: name}, mc); err != nil {
			return err
		}
		change(&mc.Spec)
		return c.Update(t.Context(), mc)
	}))
}

// requireRefused waits until the pool's RenderDegraded is True with reason
// and a message containing each of want, and checks that the pool keeps
// its target.
func requireRefused(t *testing.T, c client.Client, name, keeps, reason string, want ...string) *metav1.Condition {
	t.Helper()
	var cond *metav1.Condition
	controllertest.Eventually(t, func() bool {
		cond = renderDegraded(t, c, name)
		if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != reason {
			return false
		}
		for _, w := range want {
			if !strings.Contains(cond.Message, w) {
				return false
			}
		}
		return true
	}, "pool %s: RenderDegraded never said %q (reason %s); last: %+v", name, want, reason, cond)
	p := &mcfgv1.MachineConfigPool{}
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Name: name}, p))
	assert.Equal(t, keeps, p.Spec.Configuration.Name, "the pool keeps its target")
	assert.Contains(t, cond.Message, "the pool keeps "+keeps)
	return cond
}

func requireRendered(t *testing.T, c client.Client, name string) {
	t.Helper()
	controllertest.Eventually(t, func() bool {
		cond := renderDegraded(t, c, name)
		return cond != nil && cond.Status == metav1.ConditionFalse
	}, "pool %s: RenderDegraded never cleared", name)
}

// testFIPSChange turns FIPS on for a pool that has a target without it,
// and off for a pool whose target has it: both are refused. A pool without
// a target may set it.
func testFIPSChange(t *testing.T, c client.Client) {
	ctx := t.Context()
	require.NoError(t, c.Create(ctx, pool("fips", "fips")))
	require.NoError(t, c.Create(ctx, fragment("10-fips-base", "fips", fileConfig("/etc/fips-base", "base"))))
	base := target(t, c, "fips", "").Spec.Configuration.Name

	on := fragment("20-fips-on", "fips", emptyConfig)
	on.Spec.FIPS = true
	require.NoError(t, c.Create(ctx, on))
	requireRefused(t, c, "fips", base, "FIPSChange",
		"MachineConfig 20-fips-on: spec.fips: FIPS mode cannot be turned on for a pool whose nodes run without it (its target "+base+" has fips: false)")
	controllertest.RequireEvent(t, c, &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "fips"}},
		mcrender.ReasonRenderFailed, "MachineConfig 20-fips-on: spec.fips")
	require.NoError(t, c.Delete(ctx, on))
	requireRendered(t, c, "fips")

	// A new pool may start with FIPS; it may not drop it afterwards.
	withFIPS := fragment("10-fips-new", "fips-new", fileConfig("/etc/fips-new", "new"))
	withFIPS.Spec.FIPS = true
	require.NoError(t, c.Create(ctx, withFIPS))
	require.NoError(t, c.Create(ctx, pool("fips-new", "fips-new")))
	first := target(t, c, "fips-new", "").Spec.Configuration.Name
	mc, _ := renderedIgnition(t, c, first)
	assert.True(t, mc.Spec.FIPS, "a pool without a target may set fips")
	updateFragment(t, c, "10-fips-new", func(s *mcfgv1.MachineConfigSpec) { s.FIPS = false })
	requireRefused(t, c, "fips-new", first, "FIPSChange",
		"MachineConfig "+first+" (the pool's target): spec.fips is true, but no MachineConfig of the pool sets it any more")
	updateFragment(t, c, "10-fips-new", func(s *mcfgv1.MachineConfigSpec) { s.FIPS = true })
	requireRendered(t, c, "fips-new")
}

// testExtensions adds an extension MCO does not know, then kernel-devel
// with the realtime kernel: both are refused naming the MachineConfig and
// the field; MCO's extensions render.
func testExtensions(t *testing.T, c client.Client) {
	ctx := t.Context()
	require.NoError(t, c.Create(ctx, pool("ext", "ext")))
	require.NoError(t, c.Create(ctx, fragment("10-ext-base", "ext", fileConfig("/etc/ext-base", "base"))))
	base := target(t, c, "ext", "").Spec.Configuration.Name

	ext := fragment("20-ext", "ext", emptyConfig)
	ext.Spec.Extensions = []string{"usbguard", "htop"}
	require.NoError(t, c.Create(ctx, ext))
	requireRefused(t, c, "ext", base, "InvalidMachineConfig", `MachineConfig 20-ext: spec.extensions: "htop" is not a supported extension`)

	// The realtime kernel comes; the extension becomes kernel-devel, which
	// needs the default kernel.
	rt := fragment("30-ext-rt", "ext", emptyConfig)
	rt.Spec.KernelType = "realtime"
	require.NoError(t, c.Create(ctx, rt))
	updateFragment(t, c, "20-ext", func(s *mcfgv1.MachineConfigSpec) { s.Extensions = []string{"usbguard", "kernel-devel"} })
	requireRefused(t, c, "ext", base, "InvalidMachineConfig",
		"MachineConfig 20-ext: spec.extensions: kernel-devel needs the default kernel, but MachineConfig 30-ext-rt sets kernelType realtime")

	require.NoError(t, c.Delete(ctx, rt))
	p := target(t, c, "ext", base)
	mc, _ := renderedIgnition(t, c, p.Spec.Configuration.Name)
	assert.Equal(t, []string{"usbguard", "kernel-devel"}, mc.Spec.Extensions)
	requireRendered(t, c, "ext")
}

// testKernel64k asks for the 64k-pages kernel on a pool with an amd64
// node: refused, naming the node; once the node is arm64 it renders; a
// node joining without an architecture label is named again.
func testKernel64k(t *testing.T, c client.Client) {
	ctx := t.Context()
	for name, arch := range map[string]string{"arch-arm": "arm64", "arch-x86": "amd64"} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pool": "arch", corev1.LabelArchStable: arch}}}
		require.NoError(t, c.Create(ctx, node))
	}
	require.NoError(t, c.Create(ctx, pool("arch", "arch")))
	require.NoError(t, c.Create(ctx, fragment("10-arch-base", "arch", fileConfig("/etc/arch-base", "base"))))
	base := target(t, c, "arch", "").Spec.Configuration.Name

	k := fragment("20-arch-64k", "arch", emptyConfig)
	k.Spec.KernelType = "64k-pages"
	require.NoError(t, c.Create(ctx, k))
	cond := requireRefused(t, c, "arch", base, "UnsupportedArchitecture",
		"MachineConfig 20-arch-64k: spec.kernelType: 64k-pages runs on arm64 nodes only, but node arch-x86 is amd64")
	assert.NotContains(t, cond.Message, "arch-arm")

	// The node is replaced by an arm64 one (its label changes): the pool
	// renders, with no change to its MachineConfigs.
	node := &corev1.Node{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "arch-x86"}, node))
	node.Labels[corev1.LabelArchStable] = "arm64"
	require.NoError(t, c.Update(ctx, node))
	p := target(t, c, "arch", base)
	mc, _ := renderedIgnition(t, c, p.Spec.Configuration.Name)
	assert.Equal(t, "64k-pages", mc.Spec.KernelType)
	requireRendered(t, c, "arch")

	// A node without an architecture joins: named; the pool keeps the 64k
	// target it has.
	require.NoError(t, c.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "arch-new", Labels: map[string]string{"pool": "arch"}}}))
	requireRefused(t, c, "arch", p.Spec.Configuration.Name, "UnsupportedArchitecture",
		"node arch-new has no kubernetes.io/arch label")
}
