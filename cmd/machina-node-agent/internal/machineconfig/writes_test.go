package machineconfig

import (
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/machina-io/machina/cmd/internal/nodeimage"
	"github.com/machina-io/machina/cmd/machina-node-agent/internal/durable"
	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
)

// seeded returns an agent whose root is a fresh image.
func seeded(t *testing.T) *Agent {
	t.Helper()
	root, state := filepath.Join(t.TempDir(), "root"), t.TempDir()
	require.NoError(t, os.Mkdir(root, 0o755))
	require.NoError(t, nodeimage.Seed(root))
	return New(nil, nil, Options{Root: root, StateDir: state, Executor: &Executor{}})
}

func parsed(t *testing.T, ign string) *desired {
	t.Helper()
	parsed, err := mcv1.ParseIgnition([]byte(ign))
	require.NoError(t, err)
	return &desired{name: "rendered-test", ign: parsed}
}

func putAll(t *testing.T, a *Agent, d *desired) []write {
	t.Helper()
	rec := &record{}
	ws, err := a.writes(d, rec)
	require.NoError(t, err)
	require.NoError(t, a.apply(t.Context(), d, rec, ws))
	return ws
}

func (a *Agent) fs(t *testing.T) *durable.Root {
	t.Helper()
	root, err := a.rootFS()
	require.NoError(t, err)
	return root
}

func (a *Agent) at(p string) string { return filepath.Join(a.opts.Root, filepath.FromSlash(p)) }

func owner(t *testing.T, path string) [2]int {
	t.Helper()
	info, err := os.Lstat(path)
	require.NoError(t, err)
	st := info.Sys().(*syscall.Stat_t)
	return [2]int{int(st.Uid), int(st.Gid)}
}

// TestFileWrites: owners by id, overwrite false against an image file,
// and a link planted on the way resolving inside the root.
func TestFileWrites(t *testing.T) {
	a := seeded(t)
	putAll(t, a, parsed(t, `{"ignition":{"version":"3.5.0"},"storage":{"files":[
		{"path":"/etc/owned","user":{"id":4242},"group":{"id":4343},"contents":{"source":"data:,x"}},
		{"path":"/etc/new-file","overwrite":false,"contents":{"source":"data:,new"}}]}}`))
	assert.Equal(t, [2]int{4242, 4343}, owner(t, a.at("/etc/owned")))
	data, err := os.ReadFile(a.at("/etc/new-file"))
	require.NoError(t, err)
	assert.Equal(t, "new", string(data), "overwrite false writes a file that is not there")

	_, err = a.writes(parsed(t, `{"ignition":{"version":"3.5.0"},"storage":{"files":[
		{"path":"/etc/chrony.conf","overwrite":false,"contents":{"source":"data:,mine"}}]}}`), &record{})
	assert.ErrorContains(t, err, "storage.files[0] (/etc/chrony.conf).overwrite: false, and the node has another file there")

	// /usr/local -> /var/usrlocal, as on RHCOS: the write follows the link
	// inside the root, never out of it.
	require.NoError(t, os.MkdirAll(a.at("/var/usrlocal"), 0o755))
	require.NoError(t, os.Symlink("/var/usrlocal", a.at("/usr/local")))
	putAll(t, a, parsed(t, `{"ignition":{"version":"3.5.0"},"storage":{"files":[
		{"path":"/usr/local/bin/tool","mode":493,"contents":{"source":"data:,x"}}]}}`))
	info, err := os.Stat(a.at("/var/usrlocal/bin/tool"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), info.Mode().Perm())
}

// TestUnitWrites: enablement follows the unit's [Install] section
// (WantedBy, RequiredBy, Alias), an image's unit is enabled where its file
// is, a template's instance through the template, a mask is a link to
// /dev/null, disabling removes every link, a unit without a file or
// without [Install] cannot be enabled, and the preset decides once no
// configuration sets the enablement.
func TestUnitWrites(t *testing.T) {
	a := seeded(t)
	require.NoError(t, os.WriteFile(a.at("/usr/lib/systemd/system/getty@.service"), []byte("[Install]\nWantedBy=getty.target\n"), 0o644))
	require.NoError(t, os.MkdirAll(a.at("/etc/systemd/system/timers.target.wants"), 0o755))
	require.NoError(t, os.Symlink("/usr/lib/systemd/system/chronyd.service", a.at("/etc/systemd/system/timers.target.wants/chronyd.service")))
	putAll(t, a, parsed(t, `{"ignition":{"version":"3.5.0"},"systemd":{"units":[
		{"name":"app.service","enabled":true,"contents":"[Install]\nWantedBy=multi-user.target\nRequiredBy=app.target\nAlias=web.service\n"},
		{"name":"getty@tty2.service","enabled":true},
		{"name":"chronyd.service","enabled":false},
		{"name":"bluetooth.service","mask":true,"contents":"ignored"},
		{"name":"plain.service","enabled":false,"contents":"[Service]\n"}]}}`))
	assertLink(t, a.at("/etc/systemd/system/multi-user.target.wants/app.service"), "/etc/systemd/system/app.service")
	assertLink(t, a.at("/etc/systemd/system/app.target.requires/app.service"), "/etc/systemd/system/app.service")
	assertLink(t, a.at("/etc/systemd/system/web.service"), "/etc/systemd/system/app.service")
	assertLink(t, a.at("/etc/systemd/system/getty.target.wants/getty@tty2.service"), "/usr/lib/systemd/system/getty@.service")
	assertLink(t, a.at("/etc/systemd/system/bluetooth.service"), "/dev/null")
	for _, gone := range []string{"/etc/systemd/system/multi-user.target.wants/chronyd.service", "/etc/systemd/system/timers.target.wants/chronyd.service"} {
		_, err := os.Lstat(a.at(gone))
		assert.True(t, os.IsNotExist(err), "%s is removed by enabled: false", gone)
	}

	for ign, want := range map[string]string{
		`{"name":"nowhere.service","enabled":true}`:                                         "the unit has no contents and no unit file on the node",
		`{"name":"bare.service","enabled":true,"contents":"[Service]\n"}`:                   "has no [Install] WantedBy=, RequiredBy= or Alias=",
		`{"name":"evil.service","enabled":true,"contents":"[Install]\nWantedBy=../../x\n"}`: `[Install] names "../../x", which is not a unit name`,
	} {
		_, err := a.writes(parsed(t, `{"ignition":{"version":"3.5.0"},"systemd":{"units":[`+ign+`]}}`), &record{})
		assert.ErrorContains(t, err, want, ign)
	}

	// Presets: chronyd is enabled by the image's preset, anything else disabled.
	require.NoError(t, applyPreset(a.fs(t), "chronyd.service"))
	assertLink(t, a.at("/etc/systemd/system/multi-user.target.wants/chronyd.service"), "/usr/lib/systemd/system/chronyd.service")
	require.NoError(t, applyPreset(a.fs(t), "app.service"))
	_, err := os.Lstat(a.at("/etc/systemd/system/multi-user.target.wants/app.service"))
	assert.True(t, os.IsNotExist(err), "disable * in the preset disables app.service")
}

func assertLink(t *testing.T, path, target string) {
	t.Helper()
	got, err := os.Readlink(path)
	require.NoError(t, err, "%s is a link", path)
	assert.Equal(t, target, got, "target of %s", path)
}

// TestPlan: the least action for a set of changes, with MCO's defaults and
// a pool's policy first.
func TestPlan(t *testing.T) {
	file := func(p string) origin { return origin{Kind: originFile, Name: p} }
	unit := func(n string) origin { return origin{Kind: originUnit, Name: n} }
	pool := &mcv1.NodeDisruptionPolicy{
		Files: []mcv1.NodeDisruptionPolicyFile{{Path: "/etc/app", Actions: restart("app.service")},
			{Path: "/etc/app/drain-me", Actions: []mcv1.NodeDisruptionAction{{Type: mcv1.ActionDrain}}}},
		Units: []mcv1.NodeDisruptionPolicyUnit{{Name: "app.service", Actions: []mcv1.NodeDisruptionAction{{Type: mcv1.ActionDaemonReload}}}},
	}
	for _, tc := range []struct {
		name    string
		pool    *mcv1.NodeDisruptionPolicy
		changes []origin
		summary string
		drain   bool
	}{
		{"nothing", nil, nil, "none", false},
		{"ssh keys", nil, []origin{{Kind: originSSHKey}}, "none", false},
		{"kubelet.conf", nil, []origin{file("/etc/kubernetes/kubelet.conf")}, "restart kubelet.service", false},
		{"registries", nil, []origin{file("/etc/containers/registries.d/x.yaml"), file("/etc/containers/policy.json")}, "reload crio.service", false},
		{"any other file", nil, []origin{file("/etc/chrony.conf")}, "drain, reboot", true},
		{"kernel arguments", pool, []origin{{Kind: originKargs}}, "drain, reboot", true},
		{"pool file under a directory", pool, []origin{file("/etc/app/conf.d/x")}, "restart app.service", false},
		{"longest path wins", pool, []origin{file("/etc/app/drain-me")}, "drain", true},
		{"pool unit", pool, []origin{unit("app.service"), file("/etc/app/x"), file("/etc/kubernetes/kubelet.conf")},
			"daemon-reload, restart app.service, restart kubelet.service", false},
		{"unknown unit", pool, []origin{unit("other.service")}, "drain, reboot", true},
	} {
		act, drain := plan("c", tc.pool, tc.changes)
		assert.Equal(t, tc.summary, act.Summary, tc.name)
		assert.Equal(t, tc.drain, drain, tc.name)
	}
	data, err := json.Marshal(defaultPolicy)
	require.NoError(t, err)
	assert.Contains(t, string(data), "/etc/kubernetes/kubelet.conf")
}
