package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/cmd/internal/nodeimage"
	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
	"github.com/machina-io/machina/core/testenv"
	"github.com/machina-io/machina/internal/process"
)

// mcNode is one node of these tests: its directories (the root seeded with
// an image, cmd/internal/nodeimage) and its recording systemctl.
type mcNode struct {
	dirs
	name      string
	systemctl nodeimage.Systemctl
}

func newMCNode(t *testing.T, env *testenv.Env, name string) mcNode {
	t.Helper()
	n := mcNode{dirs: newDirs(t), name: name}
	require.NoError(t, nodeimage.Seed(n.root))
	var err error
	n.systemctl, err = nodeimage.WriteSystemctl(filepath.Join(filepath.Dir(n.root), "bin"), n.root)
	require.NoError(t, err)
	return n
}

// start runs the agent of n with the recording systemctl and the image's
// boot ID and FIPS files.
func (n mcNode) start(t *testing.T, env *testenv.Env, extra ...string) {
	t.Helper()
	startAgent(t, n.args(env.Kubeconfig, n.name, append([]string{
		"--systemctl=" + n.systemctl.Path,
		"--boot-id-file=" + n.at(nodeimage.BootIDFile),
		"--fips-file=" + n.at(nodeimage.FIPSFile),
		"--drift-check-interval=100ms", "--retry-interval=200ms",
	}, extra...)...))
}

// at is the host path of a node path.
func (n mcNode) at(p string) string { return filepath.Join(n.root, filepath.FromSlash(p)) }

func (n mcNode) calls(t *testing.T) []string {
	t.Helper()
	calls, err := n.systemctl.Calls()
	require.NoError(t, err)
	return calls
}

const sshKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOfakekeyforthetestsonly core@example"

// webConfig is a MachineConfig as an OpenShift user writes one: a file
// owned by core, a unit wanted by default.target with a drop-in, the
// image's chrony.conf overwritten, the image's chronyd disabled, an SSH key
// and a kernel argument.
func webConfig() (map[string]any, mcv1.MachineConfigSpec) {
	return map[string]any{
			"ignition": map[string]any{"version": "3.2.0"},
			"passwd":   map[string]any{"users": []any{map[string]any{"name": "core", "sshAuthorizedKeys": []any{sshKey}}}},
			"storage": map[string]any{"files": []any{
				map[string]any{"path": "/etc/web/app.conf", "mode": 0o600, "overwrite": true,
					"user": map[string]any{"name": "core"}, "group": map[string]any{"name": "wheel"},
					"contents": map[string]any{"source": "data:,level%3D2%0A"}},
				map[string]any{"path": nodeimage.ChronyConf, "contents": map[string]any{"source": "data:,server%20time.example.com%0A"}},
			}},
			"systemd": map[string]any{"units": []any{
				map[string]any{"name": "web.service", "enabled": true,
					"contents": "[Service]\nExecStart=/usr/local/bin/web\n[Install]\nWantedBy=default.target\n",
					"dropins":  []any{map[string]any{"name": "10-env.conf", "contents": "[Service]\nEnvironment=LEVEL=2\n"}}},
				map[string]any{"name": nodeimage.VendorUnit, "enabled": false},
			}},
		}, mcv1.MachineConfigSpec{
			KernelArguments: []string{"nosmt"},
		}
}

// TestMachineConfigApplyActivateRestore runs the agent in the test process
// against a real API server, plays the core's drain controller, and
// follows one node through three configurations: the first puts every
// kind of field in place and reboots once; the second changes only
// kubelet.conf and restarts the kubelet, nothing more; the third removes
// everything and the image comes back (its files, its unit's preset, its
// boot entry).
func TestMachineConfigApplyActivateRestore(t *testing.T) {
	env := testenv.Start(t)
	n := newMCNode(t, env, "mc-web")
	ign, spec := webConfig()
	createRendered(t, env, "rendered-web-1", spec, ign)
	createNode(t, env, n.name, "", nil, map[string]string{mcoDesiredConfig: "rendered-web-1"})
	n.start(t, env)

	playDrainController(t, env, n.name, "rendered-web-1", func() {
		_, err := os.Stat(n.at("/etc/web/app.conf"))
		assert.True(t, os.IsNotExist(err), "nothing is written before the drain")
	})
	node := waitNode(t, env, n.name, "done", mcoIs("Done", "rendered-web-1"))
	assert.Equal(t, "drain, reboot", node.Annotations[mcv1.LastActionsAnnotation])
	assert.Equal(t, []string{"reboot"}, n.calls(t), "the reboot is asked once, and nothing else")

	assertOwnedFile(t, n.at("/etc/web/app.conf"), "level=2\n", 0o600, nodeimage.CoreUID, 10)
	assertOwnedFile(t, n.at("/home/core/.ssh/authorized_keys.d/ignition"), sshKey+"\n", 0o600, nodeimage.CoreUID, nodeimage.CoreUID)
	assertOwnedFile(t, n.at(nodeimage.ChronyConf), "server time.example.com\n", 0o644, 0, 0)
	assertLink(t, n.at("/etc/systemd/system/default.target.wants/web.service"), "/etc/systemd/system/web.service")
	assertMissing(t, n.at("/etc/systemd/system/multi-user.target.wants/web.service"))
	assertMissing(t, n.at(nodeimage.WantsDir+"/"+nodeimage.VendorUnit))
	assertFile(t, n.at("/etc/systemd/system/web.service.d/10-env.conf"), "[Service]\nEnvironment=LEVEL=2\n", 0o644)
	entry, err := os.ReadFile(n.at(nodeimage.BootEntry))
	require.NoError(t, err)
	assert.Contains(t, string(entry), "options "+nodeimage.BootOptions+" nosmt\n")

	// Drift: a managed file edited behind the agent's back, then put back.
	require.NoError(t, os.WriteFile(n.at("/etc/web/app.conf"), []byte("level=9\n"), 0o600))
	node = waitNode(t, env, n.name, "degraded by drift", stateIs(mcoStateDegraded))
	assert.Contains(t, node.Annotations[mcoReason], "/etc/web/app.conf content changed")
	require.NoError(t, os.WriteFile(n.at("/etc/web/app.conf"), []byte("level=2\n"), 0o600))
	waitNode(t, env, n.name, "drift gone", mcoIs("Done", "rendered-web-1"))

	// Only kubelet.conf changes: the kubelet restarts, no drain, no reboot.
	files := ign["storage"].(map[string]any)["files"].([]any)
	ign["storage"].(map[string]any)["files"] = append(files, map[string]any{
		"path": nodeimage.KubeletConf, "contents": map[string]any{"source": mcv1.DataURL([]byte(nodeimage.KubeletImage + "maxPods: 300\n"))}})
	createRendered(t, env, "rendered-web-2", spec, ign)
	setAnnotation(t, env, n.name, mcoDesiredConfig, "rendered-web-2")
	node = waitNode(t, env, n.name, "done with 2", mcoIs("Done", "rendered-web-2"))
	assert.Equal(t, "restart kubelet.service", node.Annotations[mcv1.LastActionsAnnotation])
	assert.Equal(t, []string{"reboot", "restart kubelet.service"}, n.calls(t))
	assert.Equal(t, mcv1.UncordonRequestPrefix+"rendered-web-1", node.Annotations[mcoDesiredDrain], "no drain for a kubelet restart")
	assertFile(t, n.at(nodeimage.KubeletConf), nodeimage.KubeletImage+"maxPods: 300\n", 0o644)

	// Everything removed: the image comes back.
	createRendered(t, env, "rendered-web-3", mcv1.MachineConfigSpec{}, map[string]any{"ignition": map[string]any{"version": "3.5.0"}})
	setAnnotation(t, env, n.name, mcoDesiredConfig, "rendered-web-3")
	playDrainController(t, env, n.name, "rendered-web-3", nil)
	node = waitNode(t, env, n.name, "done with 3", mcoIs("Done", "rendered-web-3"))
	assert.Equal(t, "drain, reboot", node.Annotations[mcv1.LastActionsAnnotation], "removing a kernel argument reboots")
	assert.Equal(t, []string{"reboot", "restart kubelet.service", "reboot"}, n.calls(t))
	assertOwnedFile(t, n.at(nodeimage.ChronyConf), nodeimage.ChronyImage, 0o644, 0, 0)
	assertFile(t, n.at(nodeimage.KubeletConf), nodeimage.KubeletImage, 0o644)
	assertLink(t, n.at(nodeimage.WantsDir+"/"+nodeimage.VendorUnit), nodeimage.VendorUnitDir+"/"+nodeimage.VendorUnit)
	for _, gone := range []string{"/etc/web/app.conf", "/etc/systemd/system/web.service", "/etc/systemd/system/web.service.d/10-env.conf",
		"/etc/systemd/system/default.target.wants/web.service", "/home/core/.ssh/authorized_keys.d/ignition"} {
		assertMissing(t, n.at(gone))
	}
	entry, err = os.ReadFile(n.at(nodeimage.BootEntry))
	require.NoError(t, err)
	assert.Contains(t, string(entry), "options "+nodeimage.BootOptions+"\n", "the boot entry is the image's again")
}

// TestMachineConfigRefusals: what the agent cannot apply makes the node
// Unreconcilable or Degraded with a reason that names the field, and asks
// for no drain.
func TestMachineConfigRefusals(t *testing.T) {
	env := testenv.Start(t)
	for _, tc := range []struct {
		name   string
		ign    map[string]any
		spec   mcv1.MachineConfigSpec
		state  string
		reason string
	}{
		{"disks", map[string]any{"storage": map[string]any{"disks": []any{map[string]any{"device": "/dev/sdb"}}}}, mcv1.MachineConfigSpec{},
			mcoStateUnreconcilable, "storage.disks"},
		{"another user", map[string]any{"passwd": map[string]any{"users": []any{map[string]any{"name": "alice", "sshAuthorizedKeys": []any{sshKey}}}}},
			mcv1.MachineConfigSpec{}, mcoStateUnreconcilable, `passwd.users[0] (user "alice"`},
		{"password", map[string]any{"passwd": map[string]any{"users": []any{map[string]any{"name": "core", "passwordHash": "$6$x"}}}},
			mcv1.MachineConfigSpec{}, mcoStateUnreconcilable, "passwd.users[0].passwordHash"},
		{"unknown key", map[string]any{"storage": map[string]any{"filez": []any{}}}, mcv1.MachineConfigSpec{},
			mcoStateUnreconcilable, `unknown field "filez"`},
		{"fips", nil, mcv1.MachineConfigSpec{FIPS: true}, mcoStateUnreconcilable, "fips: the configuration sets true"},
		{"kernel type", nil, mcv1.MachineConfigSpec{KernelType: "realtime"}, mcoStateDegraded,
			"kernelType: not applied: this node agent has no --os-update-command"},
		{"extensions", nil, mcv1.MachineConfigSpec{Extensions: []string{"usbguard"}}, mcoStateDegraded, "extensions: not applied"},
		{"os images", nil, mcv1.MachineConfigSpec{OSImageURL: "quay.io/example/os@sha256:1", BaseOSExtensionsContainerImage: "quay.io/example/ext@sha256:2"},
			mcoStateDegraded, "osImageURL, baseOSExtensionsContainerImage: not applied: this node agent has no --os-update-command"},
		{"enabled without a unit file", map[string]any{"systemd": map[string]any{"units": []any{map[string]any{"name": "nowhere.service", "enabled": true}}}},
			mcv1.MachineConfigSpec{}, mcoStateDegraded, "systemd.units (nowhere.service).enabled: the unit has no contents and no unit file"},
		{"no owner", map[string]any{"storage": map[string]any{"files": []any{map[string]any{"path": "/etc/x", "user": map[string]any{"name": "nobody-here"}}}}},
			mcv1.MachineConfigSpec{}, mcoStateDegraded, `storage.files[0] (/etc/x).user: no "nobody-here" in the node's /etc/passwd`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "refuse-" + strings.ReplaceAll(tc.name, " ", "-")
			ign := map[string]any{"ignition": map[string]any{"version": "3.5.0"}}
			for k, v := range tc.ign {
				ign[k] = v
			}
			createRendered(t, env, "rendered-"+name, tc.spec, ign)
			n := newMCNode(t, env, name)
			createNode(t, env, n.name, "", nil, map[string]string{mcoDesiredConfig: "rendered-" + name})
			n.start(t, env)
			node := waitNode(t, env, n.name, tc.state, stateIs(tc.state))
			assert.Contains(t, node.Annotations[mcoReason], tc.reason)
			_, asked := node.Annotations[mcoDesiredDrain]
			assert.False(t, asked, "no drain for a configuration that is not applied")
			assert.Empty(t, n.calls(t))
		})
	}
}

// TestMachineConfigOSUpdateCommand: the kernel type, extensions, OS
// image and extensions image go through the operator's command, then the
// node reboots.
func TestMachineConfigOSUpdateCommand(t *testing.T) {
	env := testenv.Start(t)
	n := newMCNode(t, env, "mc-rt")
	seen := filepath.Join(t.TempDir(), "os-update.env")
	createRendered(t, env, "rendered-rt", mcv1.MachineConfigSpec{KernelType: "realtime", Extensions: []string{"usbguard", "kerberos"},
		OSImageURL: "quay.io/example/os@sha256:1", BaseOSExtensionsContainerImage: "quay.io/example/ext@sha256:2"},
		map[string]any{"ignition": map[string]any{"version": "3.5.0"}})
	createNode(t, env, n.name, "", nil, map[string]string{mcoDesiredConfig: "rendered-rt"})
	n.start(t, env, "--os-update-command=env | grep ^MACHINA_ | sort > "+seen)
	playDrainController(t, env, n.name, "rendered-rt", nil)
	node := waitNode(t, env, n.name, "done", mcoIs("Done", "rendered-rt"))
	assert.Equal(t, "drain, reboot", node.Annotations[mcv1.LastActionsAnnotation])
	got, err := os.ReadFile(seen)
	require.NoError(t, err)
	assert.Contains(t, string(got), "MACHINA_KERNEL_TYPE=realtime\n")
	assert.Contains(t, string(got), "MACHINA_EXTENSIONS=usbguard kerberos\n")
	assert.Contains(t, string(got), "MACHINA_OS_IMAGE_URL=quay.io/example/os@sha256:1\n")
	assert.Contains(t, string(got), "MACHINA_BASE_OS_EXTENSIONS_IMAGE=quay.io/example/ext@sha256:2\n")
	assert.Contains(t, string(got), "MACHINA_ROOT="+n.root+"\n")
	assert.Equal(t, []string{"reboot"}, n.calls(t))
}

// TestMachineConfigRetry: a failure of the node (a kubelet that does not
// restart) is Degraded with the reason, tried again with back-off, and
// heals by itself once the cause is gone.
func TestMachineConfigRetry(t *testing.T) {
	env := testenv.Start(t)
	n := newMCNode(t, env, "mc-retry")
	createRendered(t, env, "rendered-retry", mcv1.MachineConfigSpec{}, map[string]any{
		"ignition": map[string]any{"version": "3.5.0"},
		"storage": map[string]any{"files": []any{map[string]any{"path": nodeimage.KubeletConf,
			"contents": map[string]any{"source": mcv1.DataURL([]byte(nodeimage.KubeletImage + "maxPods: 120\n"))}}}},
	})
	require.NoError(t, n.systemctl.Fail("restart", "Job for kubelet.service failed"))
	createNode(t, env, n.name, "", nil, map[string]string{mcoDesiredConfig: "rendered-retry"})
	n.start(t, env)
	node := waitNode(t, env, n.name, "degraded", stateIs(mcoStateDegraded))
	assert.Contains(t, node.Annotations[mcoReason], "systemctl restart kubelet.service failed")
	assert.Contains(t, node.Annotations[mcoReason], "Job for kubelet.service failed")
	waitNode(t, env, n.name, "tried again", func(*corev1.Node) string {
		if calls := n.calls(t); len(calls) < 2 {
			return fmt.Sprintf("calls %q", calls)
		}
		return ""
	})
	require.NoError(t, n.systemctl.Heal("restart"))
	node = waitNode(t, env, n.name, "healed", mcoIs("Done", "rendered-retry"))
	assert.Equal(t, "restart kubelet.service", node.Annotations[mcv1.LastActionsAnnotation])
	_, hasReason := node.Annotations[mcoReason]
	assert.False(t, hasReason)
}

// TestMachineConfigMissingOrEscaping: a missing configuration is Degraded
// and tried again; a path out of the root is refused.
func TestMachineConfigMissingOrEscaping(t *testing.T) {
	env := testenv.Start(t)
	n := newMCNode(t, env, "mc-missing")
	createNode(t, env, n.name, "", nil, map[string]string{mcoDesiredConfig: "rendered-nowhere"})
	n.start(t, env)
	node := waitNode(t, env, n.name, "degraded", stateIs(mcoStateDegraded))
	assert.Equal(t, "rendered MachineConfig rendered-nowhere not found", node.Annotations[mcoReason])
	// Created later: the retry finds it.
	createRendered(t, env, "rendered-nowhere", mcv1.MachineConfigSpec{}, map[string]any{"ignition": map[string]any{"version": "3.5.0"}})
	waitNode(t, env, n.name, "found on retry", mcoIs("Done", "rendered-nowhere"))

	createRendered(t, env, "rendered-escape", mcv1.MachineConfigSpec{}, map[string]any{
		"ignition": map[string]any{"version": "3.5.0"},
		"storage": map[string]any{"files": []any{
			map[string]any{"path": "/etc/../../escaped", "contents": map[string]any{"source": "data:,x"}},
		}},
	})
	setAnnotation(t, env, n.name, mcoDesiredConfig, "rendered-escape")
	node = waitNode(t, env, n.name, "refused", stateIs(mcoStateUnreconcilable))
	assert.Contains(t, node.Annotations[mcoReason], "path leaves the node's file system")
	assertMissing(t, filepath.Join(filepath.Dir(n.root), "escaped"))
}

// createRendered creates a rendered MachineConfig with a spec and an
// Ignition config as the render controller writes them.
func createRendered(t *testing.T, env *testenv.Env, name string, spec mcv1.MachineConfigSpec, ignition map[string]any) {
	t.Helper()
	raw, err := json.Marshal(ignition)
	require.NoError(t, err)
	mc := &mcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
	mc.Spec.Config.Raw = raw
	require.NoError(t, env.Client.Create(t.Context(), mc))
}

// playDrainController waits for the agent's drain request for config,
// runs beforeAck (if any), acknowledges it, then does the same for the
// uncordon request.
func playDrainController(t *testing.T, env *testenv.Env, node, config string, beforeAck func()) {
	t.Helper()
	for _, verb := range []string{mcv1.DrainRequestPrefix, mcv1.UncordonRequestPrefix} {
		want := verb + config
		n := waitNode(t, env, node, "asks for "+want, func(n *corev1.Node) string {
			if got := n.Annotations[mcoDesiredDrain]; got != want {
				return fmt.Sprintf("desiredDrain %q, state %q, reason %q", got, n.Annotations[mcoState], n.Annotations[mcoReason])
			}
			return ""
		})
		assert.Equal(t, mcoStateWorking, n.Annotations[mcoState], "the agent is Working while it waits for %s", want)
		if beforeAck != nil && verb == mcv1.DrainRequestPrefix {
			beforeAck()
		}
		setAnnotation(t, env, node, mcoLastAppliedDrain, want)
	}
}

func setAnnotation(t *testing.T, env *testenv.Env, name, key, value string) {
	t.Helper()
	n := &corev1.Node{}
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Name: name}, n))
	patched := n.DeepCopy()
	if patched.Annotations == nil {
		patched.Annotations = map[string]string{}
	}
	patched.Annotations[key] = value
	require.NoError(t, env.Client.Patch(t.Context(), patched, client.MergeFrom(n)))
}

// mcoIs checks the agent's report: state, and currentConfig.
func mcoIs(state, current string) func(*corev1.Node) string {
	return func(n *corev1.Node) string {
		if n.Annotations[mcoState] != state || n.Annotations[mcoCurrentConfig] != current {
			return fmt.Sprintf("state %q, currentConfig %q, reason %q", n.Annotations[mcoState], n.Annotations[mcoCurrentConfig], n.Annotations[mcoReason])
		}
		return ""
	}
}

func stateIs(state string) func(*corev1.Node) string {
	return func(n *corev1.Node) string {
		if n.Annotations[mcoState] != state {
			return fmt.Sprintf("state %q, reason %q", n.Annotations[mcoState], n.Annotations[mcoReason])
		}
		return ""
	}
}

func assertOwnedFile(t *testing.T, path, content string, mode os.FileMode, uid, gid int) {
	t.Helper()
	assertFile(t, path, content, mode)
	info, err := os.Stat(path)
	require.NoError(t, err)
	st := info.Sys().(*syscall.Stat_t)
	assert.Equal(t, []int{uid, gid}, []int{int(st.Uid), int(st.Gid)}, "owner of %s", path)
}

func assertLink(t *testing.T, path, target string) {
	t.Helper()
	got, err := os.Readlink(path)
	require.NoError(t, err, "%s is a link", path)
	assert.Equal(t, target, got, "target of %s", path)
}

func assertMissing(t *testing.T, path string) {
	t.Helper()
	_, err := os.Lstat(path)
	assert.True(t, os.IsNotExist(err), "%s should not exist (%v)", path, err)
}

// The handshake's annotations, short.
const (
	mcoCurrentConfig       = mcv1.CurrentConfigAnnotation
	mcoDesiredConfig       = mcv1.DesiredConfigAnnotation
	mcoState               = mcv1.StateAnnotation
	mcoReason              = mcv1.ReasonAnnotation
	mcoDesiredDrain        = mcv1.DesiredDrainAnnotation
	mcoLastAppliedDrain    = mcv1.LastAppliedDrainAnnotation
	mcoStateWorking        = mcv1.MachineConfigStateWorking
	mcoStateDegraded       = mcv1.MachineConfigStateDegraded
	mcoStateUnreconcilable = mcv1.MachineConfigStateUnreconcilable
)

// TestMachineConfigRevert: a node Done on A that fails on B is given A
// again (the pool's render moved back after the user reverted B): the
// agent puts A back and reports Done, with no manual step.
func TestMachineConfigRevert(t *testing.T) {
	env := testenv.Start(t)
	n := newMCNode(t, env, "mc-revert")
	good := map[string]any{"ignition": map[string]any{"version": "3.5.0"},
		"passwd": map[string]any{"users": []any{map[string]any{"name": "core", "sshAuthorizedKeys": []any{sshKey}}}}}
	createRendered(t, env, "rendered-revert-a", mcv1.MachineConfigSpec{}, good)
	createNode(t, env, n.name, "", nil, map[string]string{mcoDesiredConfig: "rendered-revert-a"})
	n.start(t, env)
	node := waitNode(t, env, n.name, "done on A", mcoIs("Done", "rendered-revert-a"))
	assert.Equal(t, "none", node.Annotations[mcv1.LastActionsAnnotation], "an SSH key needs no drain and no reboot")
	_, asked := node.Annotations[mcoDesiredDrain]
	assert.False(t, asked, "no drain for an SSH key")

	createRendered(t, env, "rendered-revert-b", mcv1.MachineConfigSpec{}, map[string]any{"ignition": map[string]any{"version": "3.5.0"},
		"systemd": map[string]any{"units": []any{map[string]any{"name": "missing.service", "enabled": true}}}})
	setAnnotation(t, env, n.name, mcoDesiredConfig, "rendered-revert-b")
	node = waitNode(t, env, n.name, "degraded on B", stateIs(mcoStateDegraded))
	assert.Contains(t, node.Annotations[mcoReason], "systemd.units (missing.service).enabled")

	setAnnotation(t, env, n.name, mcoDesiredConfig, "rendered-revert-a")
	node = waitNode(t, env, n.name, "done on A again", mcoIs("Done", "rendered-revert-a"))
	_, hasReason := node.Annotations[mcoReason]
	assert.False(t, hasReason)
	assertOwnedFile(t, n.at("/home/core/.ssh/authorized_keys.d/ignition"), sshKey+"\n", 0o600, nodeimage.CoreUID, nodeimage.CoreUID)
	assert.Empty(t, n.calls(t), "nothing to activate")
}

// TestMachineConfigPoolPolicy: the pool's nodeDisruptionPolicy comes
// before the defaults: a chrony.conf change, which would reboot the node,
// restarts chronyd instead, and a unit's policy adds its own steps.
func TestMachineConfigPoolPolicy(t *testing.T) {
	env := testenv.Start(t)
	pool := &mcv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "policy"}}
	pool.Spec.NodeDisruptionPolicy = &mcv1.NodeDisruptionPolicy{
		Files: []mcv1.NodeDisruptionPolicyFile{{Path: nodeimage.ChronyConf, Actions: []mcv1.NodeDisruptionAction{
			{Type: mcv1.ActionRestart, Restart: &mcv1.NodeDisruptionService{ServiceName: "chronyd.service"}}}}},
		Units: []mcv1.NodeDisruptionPolicyUnit{{Name: "web.service", Actions: []mcv1.NodeDisruptionAction{
			{Type: mcv1.ActionReload, Reload: &mcv1.NodeDisruptionService{ServiceName: "web.service"}}}}},
	}
	require.NoError(t, env.Client.Create(t.Context(), pool))
	n := newMCNode(t, env, "mc-policy")
	mc := &mcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "rendered-policy-1",
		Annotations: map[string]string{mcv1.RenderedFromPoolAnnotation: "policy"}}}
	mc.Spec.Config.Raw = []byte(`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"` + nodeimage.ChronyConf +
		`","contents":{"source":"data:,server%20ntp.example.com%0A"}}]},"systemd":{"units":[{"name":"web.service","contents":"[Service]\nExecStart=/bin/web\n"}]}}`)
	require.NoError(t, env.Client.Create(t.Context(), mc))
	createNode(t, env, n.name, "", nil, map[string]string{mcoDesiredConfig: "rendered-policy-1"})
	n.start(t, env)
	node := waitNode(t, env, n.name, "done", mcoIs("Done", "rendered-policy-1"))
	assert.Equal(t, "daemon-reload, reload web.service, restart chronyd.service", node.Annotations[mcv1.LastActionsAnnotation])
	assert.Equal(t, []string{"daemon-reload", "reload web.service", "restart chronyd.service"}, n.calls(t))
	_, asked := node.Annotations[mcoDesiredDrain]
	assert.False(t, asked, "no drain: the pool's policy needs none")
}

// TestMachineConfigRebootAcrossRestarts: on a real node the agent dies
// with the reboot it asked for. Stopped while it waits for the reboot,
// a new agent on the rebooted node (a new boot ID) goes on from its
// record: it does not ask for the reboot again and reports Done.
func TestMachineConfigRebootAcrossRestarts(t *testing.T) {
	env := testenv.Start(t)
	n := newMCNode(t, env, "mc-reboot")
	require.NoError(t, n.systemctl.HoldReboot())
	createRendered(t, env, "rendered-reboot", mcv1.MachineConfigSpec{KernelArguments: []string{"mitigations=off"}},
		map[string]any{"ignition": map[string]any{"version": "3.5.0"}})
	createNode(t, env, n.name, "", nil, map[string]string{mcoDesiredConfig: "rendered-reboot"})

	ctx, stop := context.WithCancel(t.Context())
	args := n.args(env.Kubeconfig, n.name, "--systemctl="+n.systemctl.Path,
		"--boot-id-file="+n.at(nodeimage.BootIDFile), "--fips-file="+n.at(nodeimage.FIPSFile))
	done := make(chan int, 1)
	logs := &process.Buffer{}
	go func() { done <- run(ctx, args, logs, logs) }()
	// The drain, then the reboot request; the agent is stopped as the
	// reboot would stop it.
	waitNode(t, env, n.name, "asks for the drain", func(node *corev1.Node) string {
		if node.Annotations[mcoDesiredDrain] != mcv1.DrainRequestPrefix+"rendered-reboot" {
			return "desiredDrain " + node.Annotations[mcoDesiredDrain]
		}
		return ""
	})
	setAnnotation(t, env, n.name, mcoLastAppliedDrain, mcv1.DrainRequestPrefix+"rendered-reboot")
	waitNode(t, env, n.name, "rebooting", func(node *corev1.Node) string {
		if node.Annotations[mcv1.PostConfigActionAnnotation] != mcv1.PostConfigActionRebooting {
			return "post-config-action " + node.Annotations[mcv1.PostConfigActionAnnotation]
		}
		if calls := n.calls(t); len(calls) == 0 {
			return "no reboot asked yet"
		}
		return ""
	})
	stop()
	select {
	case code := <-done:
		require.Equal(t, 0, code, "agent log:\n%s", logs)
	case <-time.After(30 * time.Second):
		t.Fatal("the agent did not stop")
	}
	assert.Equal(t, []string{"reboot"}, n.calls(t))

	require.NoError(t, nodeimage.Reboot(n.root))
	n.start(t, env)
	waitNode(t, env, n.name, "asks for the uncordon", func(node *corev1.Node) string {
		if node.Annotations[mcoDesiredDrain] != mcv1.UncordonRequestPrefix+"rendered-reboot" {
			return "desiredDrain " + node.Annotations[mcoDesiredDrain]
		}
		return ""
	})
	setAnnotation(t, env, n.name, mcoLastAppliedDrain, mcv1.UncordonRequestPrefix+"rendered-reboot")
	node := waitNode(t, env, n.name, "done after the reboot", mcoIs("Done", "rendered-reboot"))
	assert.Equal(t, "drain, reboot", node.Annotations[mcv1.LastActionsAnnotation])
	_, rebooting := node.Annotations[mcv1.PostConfigActionAnnotation]
	assert.False(t, rebooting, "post-config-action is removed with Done")
	assert.Equal(t, []string{"reboot"}, n.calls(t), "the reboot is not asked again")
}

// TestMachineConfigRebootTimeout: a reboot that does not happen within
// --reboot-timeout makes the node Degraded saying so, and the retry asks
// for it again.
func TestMachineConfigRebootTimeout(t *testing.T) {
	env := testenv.Start(t)
	n := newMCNode(t, env, "mc-no-reboot")
	require.NoError(t, n.systemctl.HoldReboot())
	createRendered(t, env, "rendered-no-reboot", mcv1.MachineConfigSpec{KernelArguments: []string{"nosmt"}},
		map[string]any{"ignition": map[string]any{"version": "3.5.0"}})
	createNode(t, env, n.name, "", nil, map[string]string{mcoDesiredConfig: "rendered-no-reboot"})
	n.start(t, env, "--reboot-timeout=1s")
	waitNode(t, env, n.name, "asks for the drain", func(node *corev1.Node) string {
		if node.Annotations[mcoDesiredDrain] != mcv1.DrainRequestPrefix+"rendered-no-reboot" {
			return "desiredDrain " + node.Annotations[mcoDesiredDrain]
		}
		return ""
	})
	setAnnotation(t, env, n.name, mcoLastAppliedDrain, mcv1.DrainRequestPrefix+"rendered-no-reboot")
	node := waitNode(t, env, n.name, "degraded", stateIs(mcoStateDegraded))
	assert.Contains(t, node.Annotations[mcoReason], "did not happen within 1s")
	waitNode(t, env, n.name, "asked again", func(*corev1.Node) string {
		if calls := n.calls(t); len(calls) < 2 {
			return fmt.Sprintf("calls %q", calls)
		}
		return ""
	})
	assert.Equal(t, []string{"reboot", "reboot"}, n.calls(t)[:2])
}
