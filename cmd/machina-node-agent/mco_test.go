package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
	"github.com/machina-io/machina/core/testenv"
)

// TestMachineConfigHandshake runs the agent in the test process against a
// real API server with the MachineConfig CRDs, and plays the core's drain
// controller (it acknowledges the drain requests): the files and units of
// a rendered MachineConfig land under the root, the handshake's
// annotations move as docs/machine-config.md says, drift is reported and
// cleared, and configurations the agent cannot apply say why.
func TestMachineConfigHandshake(t *testing.T) {
	env := testenv.Start(t)

	t.Run("applies files and units, asking for a drain and an uncordon", func(t *testing.T) {
		d := newDirs(t)
		createMachineConfig(t, env, "rendered-web-1", map[string]any{
			"ignition": map[string]any{"version": "3.2.0"},
			"storage": map[string]any{"files": []any{
				map[string]any{"path": "/etc/web/app.conf", "mode": 0o600, "overwrite": true,
					"contents": map[string]any{"source": "data:,level%3D2%0A"}},
				map[string]any{"path": "/usr/local/bin/hello", "mode": 0o755,
					"contents": map[string]any{"source": mcv1.DataURL([]byte("#!/bin/sh\necho hello\n"))}},
			}},
			"systemd": map[string]any{"units": []any{
				map[string]any{"name": "web.service", "enabled": true,
					"contents": "[Service]\nExecStart=/usr/local/bin/hello\n[Install]\nWantedBy=multi-user.target\n",
					"dropins":  []any{map[string]any{"name": "10-env.conf", "contents": "[Service]\nEnvironment=LEVEL=2\n"}}},
				map[string]any{"name": "old.service", "enabled": false},
			}},
		})
		// old.service was enabled before: disabling removes its link.
		require.NoError(t, os.MkdirAll(filepath.Join(d.root, "etc/systemd/system/multi-user.target.wants"), 0o755))
		require.NoError(t, os.Symlink("/etc/systemd/system/old.service", filepath.Join(d.root, "etc/systemd/system/multi-user.target.wants/old.service")))

		createNode(t, env, "mc-node", "", nil, map[string]string{mcoDesiredConfig: "rendered-web-1"})
		startAgent(t, d.args(env.Kubeconfig, "mc-node", "--drift-check-interval=100ms"))

		playDrainController(t, env, "mc-node", "rendered-web-1", func() {
			// Nothing is written before the drain is acknowledged.
			_, err := os.Stat(filepath.Join(d.root, "etc/web/app.conf"))
			assert.True(t, os.IsNotExist(err), "files are written only after the drain")
		})
		node := waitNode(t, env, "mc-node", "done", mcoIs("Done", "rendered-web-1"))
		_, hasReason := node.Annotations[mcoReason]
		assert.False(t, hasReason)

		assertFile(t, filepath.Join(d.root, "etc/web/app.conf"), "level=2\n", 0o600)
		assertFile(t, filepath.Join(d.root, "usr/local/bin/hello"), "#!/bin/sh\necho hello\n", 0o755)
		assertFile(t, filepath.Join(d.root, "etc/systemd/system/web.service"),
			"[Service]\nExecStart=/usr/local/bin/hello\n[Install]\nWantedBy=multi-user.target\n", 0o644)
		assertFile(t, filepath.Join(d.root, "etc/systemd/system/web.service.d/10-env.conf"), "[Service]\nEnvironment=LEVEL=2\n", 0o644)
		link, err := os.Readlink(filepath.Join(d.root, "etc/systemd/system/multi-user.target.wants/web.service"))
		require.NoError(t, err)
		assert.Equal(t, "/etc/systemd/system/web.service", link, "an enabled unit is linked from multi-user.target.wants")
		_, err = os.Lstat(filepath.Join(d.root, "etc/systemd/system/multi-user.target.wants/old.service"))
		assert.True(t, os.IsNotExist(err), "a disabled unit loses its link")

		// Drift: a managed file edited behind the agent's back.
		require.NoError(t, os.WriteFile(filepath.Join(d.root, "etc/web/app.conf"), []byte("level=9\n"), 0o600))
		node = waitNode(t, env, "mc-node", "degraded by drift", func(n *corev1.Node) string {
			if n.Annotations[mcoState] != mcoStateDegraded {
				return "state " + n.Annotations[mcoState]
			}
			return ""
		})
		assert.Contains(t, node.Annotations[mcoReason], "/etc/web/app.conf")
		assert.Contains(t, node.Annotations[mcoReason], "content changed")
		// Put back: the agent clears its own Degraded.
		require.NoError(t, os.WriteFile(filepath.Join(d.root, "etc/web/app.conf"), []byte("level=2\n"), 0o600))
		waitNode(t, env, "mc-node", "drift gone", mcoIs("Done", "rendered-web-1"))

		// A mode change is drift too.
		require.NoError(t, os.Chmod(filepath.Join(d.root, "usr/local/bin/hello"), 0o777))
		node = waitNode(t, env, "mc-node", "degraded by a mode change", func(n *corev1.Node) string {
			if n.Annotations[mcoState] != mcoStateDegraded {
				return "state " + n.Annotations[mcoState]
			}
			return ""
		})
		assert.Contains(t, node.Annotations[mcoReason], "/usr/local/bin/hello mode changed from 0755 to 0777")
		require.NoError(t, os.Chmod(filepath.Join(d.root, "usr/local/bin/hello"), 0o755))
		waitNode(t, env, "mc-node", "drift gone", mcoIs("Done", "rendered-web-1"))

		// The next configuration drops a file: the agent removes it.
		createMachineConfig(t, env, "rendered-web-2", map[string]any{
			"ignition": map[string]any{"version": "3.5.0"},
			"storage": map[string]any{"files": []any{
				map[string]any{"path": "/etc/web/app.conf", "contents": map[string]any{"source": "data:,level%3D3%0A"}},
			}},
		})
		setAnnotation(t, env, "mc-node", mcoDesiredConfig, "rendered-web-2")
		playDrainController(t, env, "mc-node", "rendered-web-2", nil)
		waitNode(t, env, "mc-node", "done with 2", mcoIs("Done", "rendered-web-2"))
		assertFile(t, filepath.Join(d.root, "etc/web/app.conf"), "level=3\n", 0o644)
		for _, gone := range []string{"usr/local/bin/hello", "etc/systemd/system/web.service", "etc/systemd/system/web.service.d/10-env.conf"} {
			_, err := os.Lstat(filepath.Join(d.root, gone))
			assert.True(t, os.IsNotExist(err), "%s is removed with the configuration that had it", gone)
		}
		rec, err := loadMCORecord(d.state)
		require.NoError(t, err)
		assert.Equal(t, "rendered-web-2", rec.Applied)
	})

	t.Run("a configuration it cannot apply in place is Unreconcilable", func(t *testing.T) {
		d := newDirs(t)
		createMachineConfig(t, env, "rendered-disks", map[string]any{
			"ignition": map[string]any{"version": "3.5.0"},
			"storage":  map[string]any{"disks": []any{map[string]any{"device": "/dev/sdb"}}},
		})
		createNode(t, env, "mc-disks", "", nil, map[string]string{mcoDesiredConfig: "rendered-disks"})
		startAgent(t, d.args(env.Kubeconfig, "mc-disks"))
		node := waitNode(t, env, "mc-disks", "unreconcilable", func(n *corev1.Node) string {
			if n.Annotations[mcoState] != mcoStateUnreconcilable {
				return "state " + n.Annotations[mcoState]
			}
			return ""
		})
		assert.Contains(t, node.Annotations[mcoReason], "storage.disks")
		_, asked := node.Annotations[mcoDesiredDrain]
		assert.False(t, asked, "no drain for a configuration that cannot be applied")
	})

	t.Run("a missing configuration or a path out of the root is Degraded with the reason", func(t *testing.T) {
		d := newDirs(t)
		createNode(t, env, "mc-missing", "", nil, map[string]string{mcoDesiredConfig: "rendered-nowhere"})
		startAgent(t, d.args(env.Kubeconfig, "mc-missing"))
		node := waitNode(t, env, "mc-missing", "degraded", func(n *corev1.Node) string {
			if n.Annotations[mcoState] != mcoStateDegraded {
				return "state " + n.Annotations[mcoState]
			}
			return ""
		})
		assert.Equal(t, "rendered MachineConfig rendered-nowhere not found", node.Annotations[mcoReason])

		// A new desiredConfig is tried again; this one climbs out of the root.
		createMachineConfig(t, env, "rendered-escape", map[string]any{
			"ignition": map[string]any{"version": "3.5.0"},
			"storage": map[string]any{"files": []any{
				map[string]any{"path": "/etc/../../escaped", "contents": map[string]any{"source": "data:,x"}},
			}},
		})
		setAnnotation(t, env, "mc-missing", mcoDesiredConfig, "rendered-escape")
		node = waitNode(t, env, "mc-missing", "refused", func(n *corev1.Node) string {
			if !strings.Contains(n.Annotations[mcoReason], "escaped") {
				return "reason " + n.Annotations[mcoReason]
			}
			return ""
		})
		assert.Contains(t, node.Annotations[mcoReason], "path leaves the node's file system")
		_, err := os.Stat(filepath.Join(filepath.Dir(d.root), "escaped"))
		assert.True(t, os.IsNotExist(err))
	})
}

// createMachineConfig creates a rendered MachineConfig with an Ignition
// config as a user (or the render controller) writes it.
func createMachineConfig(t *testing.T, env *testenv.Env, name string, ignition map[string]any) {
	t.Helper()
	raw, err := json.Marshal(ignition)
	require.NoError(t, err)
	mc := &mcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: name}}
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
				return fmt.Sprintf("desiredDrain %q, state %q", got, n.Annotations[mcoState])
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
