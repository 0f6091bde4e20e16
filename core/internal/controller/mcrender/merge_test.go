package mcrender

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	mcfgv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
	"github.com/machina-io/machina/core/internal/mcfg"
)

func fragment(name, role, config string, mutate ...func(*mcfgv1.MachineConfigSpec)) mcfgv1.MachineConfig {
	mc := mcfgv1.MachineConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{mcfgv1.RoleLabel: role}},
		Spec:       mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: []byte(config)}},
	}
	for _, m := range mutate {
		m(&mc.Spec)
	}
	return mc
}

func fileConfig(path, content string) string {
	return `{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"` + path + `","contents":{"source":"` +
		mcfgv1.DataURL([]byte(content)) + `"}}]}}`
}

func renderOf(t *testing.T, fragments ...mcfgv1.MachineConfig) (*rendered, *mcfgv1.Ignition) {
	t.Helper()
	mcfg.SortFragments(fragments)
	out, err := merge(fragments)
	require.NoError(t, err)
	ign, err := mcfgv1.ParseIgnition(out.spec.Config.Raw)
	require.NoError(t, err)
	return out, ign
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
	t.Fatalf("no file %s", path)
	return ""
}

func TestMergeOrder(t *testing.T) {
	// Later by name wins per path; the worker role's fragments come first,
	// so the custom role's 00- beats the worker's 99-.
	_, ign := renderOf(t,
		fragment("99-worker-b", "worker", fileConfig("/etc/b", "worker")),
		fragment("20-a", "worker", fileConfig("/etc/a", "twenty")),
		fragment("00-custom-b", "custom", fileConfig("/etc/b", "custom")),
		fragment("10-a", "worker", fileConfig("/etc/a", "ten")),
	)
	assert.Equal(t, "twenty", fileData(t, ign, "/etc/a"))
	assert.Equal(t, "custom", fileData(t, ign, "/etc/b"))
	assert.Equal(t, mcfgv1.IgnitionVersion, ign.Ignition.Version)
	for _, f := range ign.Storage.Files {
		require.NotNil(t, f.Overwrite, f.Path)
		assert.True(t, *f.Overwrite, "files without overwrite get true")
	}
}

func TestMergeFieldByField(t *testing.T) {
	// The later entry of a path or unit changes only the fields it sets;
	// dropins merge by name; unknown sections survive.
	_, ign := renderOf(t,
		fragment("10", "worker", `{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/etc/x","mode":384,"overwrite":false,"contents":{"source":"data:,x"}}]},`+
			`"systemd":{"units":[{"name":"a.service","contents":"[Unit]","dropins":[{"name":"10.conf","contents":"one"}]}]},"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["k1"]}]}}`),
		fragment("20", "worker", `{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/x","mode":420}]},`+
			`"systemd":{"units":[{"name":"a.service","enabled":true,"dropins":[{"name":"20.conf","contents":"two"}]}]},"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["k2","k1"]}]}}`),
	)
	require.Len(t, ign.Storage.Files, 1)
	f := ign.Storage.Files[0]
	assert.Equal(t, 0o644, f.FileMode())
	assert.Equal(t, "x", fileData(t, ign, "/etc/x"))
	assert.False(t, *f.Overwrite, "an explicit overwrite stays")
	require.Len(t, ign.Systemd.Units, 1)
	u := ign.Systemd.Units[0]
	assert.Equal(t, "[Unit]", *u.Contents)
	assert.True(t, *u.Enabled)
	require.Len(t, u.Dropins, 2)
	assert.Equal(t, "10.conf", u.Dropins[0].Name)
	assert.Equal(t, "20.conf", u.Dropins[1].Name)
}

// TestMergeFieldsKept: the merge works on generic JSON, so every field
// survives as written, those the agent acts on beyond paths and contents
// too (core's keys, a file's owner and hash).
func TestMergeFieldsKept(t *testing.T) {
	out, _ := renderOf(t, fragment("10", "worker",
		`{"ignition":{"version":"3.2.0"},"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["k"]}]},`+
			`"storage":{"files":[{"path":"/etc/f","user":{"name":"core"},"group":{"id":10},"contents":{"source":"data:,x",`+
			`"verification":{"hash":"sha256-2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"}}}]}}`))
	var m map[string]any
	require.NoError(t, json.Unmarshal(out.spec.Config.Raw, &m))
	assert.Equal(t, []any{"k"}, m["passwd"].(map[string]any)["users"].([]any)[0].(map[string]any)["sshAuthorizedKeys"])
	file := m["storage"].(map[string]any)["files"].([]any)[0].(map[string]any)
	assert.Equal(t, map[string]any{"name": "core"}, file["user"])
	assert.Equal(t, map[string]any{"id": float64(10)}, file["group"])
	assert.Contains(t, file["contents"].(map[string]any)["verification"].(map[string]any)["hash"], "sha256-")
}

func TestMergeSpecFields(t *testing.T) {
	out, _ := renderOf(t,
		fragment("00-generated", "worker", "", func(s *mcfgv1.MachineConfigSpec) {
			s.OSImageURL = "registry/os:generated"
			s.KernelArguments = []string{"a"}
		}),
		fragment("10-user", "worker", "", func(s *mcfgv1.MachineConfigSpec) {
			s.OSImageURL = "registry/os:user"
			s.KernelArguments = []string{"b"}
			s.Extensions = []string{"usbguard"}
			s.KernelType = "realtime"
		}),
		fragment("20-fips", "worker", "", func(s *mcfgv1.MachineConfigSpec) {
			s.FIPS = true
			s.KernelType = "default"
			s.KernelArguments = []string{"a"}
		}),
	)
	assert.Equal(t, []string{"a", "b", "a"}, out.spec.KernelArguments, "concatenated in order")
	assert.Equal(t, []string{"usbguard"}, out.spec.Extensions)
	assert.True(t, out.spec.FIPS)
	assert.Equal(t, "realtime", out.spec.KernelType, "a later default does not undo realtime")
	assert.Equal(t, "registry/os:user", out.spec.OSImageURL)
	assert.True(t, out.osImageOverridden)

	gen := fragment("00-generated", "worker", "", func(s *mcfgv1.MachineConfigSpec) { s.OSImageURL = "registry/os:generated" })
	gen.Annotations = map[string]string{mcfgv1.GeneratedByControllerVersionAnnotation: "v"}
	user := fragment("99-user", "worker", "", func(s *mcfgv1.MachineConfigSpec) { s.OSImageURL = "registry/os:user" })
	late := fragment("zz-generated", "worker", "", func(s *mcfgv1.MachineConfigSpec) { s.OSImageURL = "registry/os:late" })
	late.Annotations = map[string]string{mcfgv1.GeneratedByControllerVersionAnnotation: "v"}
	out, _ = renderOf(t, gen, user, late)
	assert.Equal(t, "registry/os:user", out.spec.OSImageURL, "a user's osImageURL beats a later generated one")
	out, _ = renderOf(t, gen, late)
	assert.Equal(t, "registry/os:late", out.spec.OSImageURL)
	assert.False(t, out.osImageOverridden)
	assert.Equal(t, "default", out.spec.KernelType)
}

func TestMergeRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		fragments []mcfgv1.MachineConfig
		want      string
	}{
		"unsupported version": {[]mcfgv1.MachineConfig{fragment("10-old", "worker", `{"ignition":{"version":"2.4.0"}}`)},
			`MachineConfig 10-old: unsupported Ignition version "2.4.0"`},
		"invalid mode": {[]mcfgv1.MachineConfig{fragment("10-mode", "worker", `{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/x","mode":99999}]}}`)},
			"MachineConfig 10-mode: file /x: invalid mode 99999"},
		"file then directory": {[]mcfgv1.MachineConfig{
			fragment("10-file", "worker", fileConfig("/etc/p", "x")),
			fragment("20-dir", "worker", `{"ignition":{"version":"3.2.0"},"storage":{"directories":[{"path":"/etc/p"}]}}`)},
			"MachineConfig 20-dir: not applicable to a running node: storage.directories"},
		"file twice in one fragment": {[]mcfgv1.MachineConfig{fragment("10-twice", "worker",
			`{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/a"},{"path":"/a"}]}}`)},
			"MachineConfig 10-twice: file /a is defined twice"},
		"unit twice in one fragment": {[]mcfgv1.MachineConfig{fragment("10-units", "worker",
			`{"ignition":{"version":"3.2.0"},"systemd":{"units":[{"name":"a.service"},{"name":"a.service"}]}}`)},
			"MachineConfig 10-units: unit a.service is defined twice"},
		"kernel-devel on realtime": {[]mcfgv1.MachineConfig{fragment("10-rt", "worker", "", func(s *mcfgv1.MachineConfigSpec) {
			s.KernelType, s.Extensions = "realtime", []string{"kernel-devel"}
		})}, "MachineConfig 10-rt: spec.extensions: kernel-devel needs the default kernel, but MachineConfig 10-rt sets kernelType realtime"},
		"kernel-devel and 64k-pages in two fragments": {[]mcfgv1.MachineConfig{
			fragment("10-devel", "worker", "", func(s *mcfgv1.MachineConfigSpec) { s.Extensions = []string{"usbguard", "kernel-devel"} }),
			fragment("20-64k", "worker", "", func(s *mcfgv1.MachineConfigSpec) { s.KernelType = "64k-pages" }),
		}, "MachineConfig 10-devel: spec.extensions: kernel-devel needs the default kernel, but MachineConfig 20-64k sets kernelType 64k-pages"},
		"unknown extension": {[]mcfgv1.MachineConfig{
			fragment("10-ok", "worker", "", func(s *mcfgv1.MachineConfigSpec) { s.Extensions = []string{"usbguard"} }),
			fragment("20-ext", "worker", "", func(s *mcfgv1.MachineConfigSpec) { s.Extensions = []string{"sysstat", "htop"} }),
		}, `MachineConfig 20-ext: spec.extensions: "htop" is not a supported extension (supported: two-node-ha, wasm, ipsec, usbguard, kerberos, kernel-devel, sandboxed-containers, sysstat)`},
		"not an object": {[]mcfgv1.MachineConfig{fragment("10-list", "worker", `[1]`)}, "MachineConfig 10-list: config is not an Ignition config"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := merge(tc.fragments)
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

func TestMergeSupportedExtensions(t *testing.T) {
	// MCO's list: every one renders, in merge order.
	out, _ := renderOf(t, fragment("10-all", "worker", "", func(s *mcfgv1.MachineConfigSpec) {
		s.Extensions = []string{"two-node-ha", "wasm", "ipsec", "usbguard", "kerberos", "kernel-devel", "sandboxed-containers", "sysstat"}
	}))
	assert.Equal(t, SupportedExtensions, out.spec.Extensions)
	assert.Equal(t, "default", out.spec.KernelType, "kernel-devel with the default kernel")
}

func TestRenderedNameStable(t *testing.T) {
	a := []mcfgv1.MachineConfig{
		fragment("10-a", "worker", fileConfig("/etc/a", "a")),
		fragment("20-b", "worker", `{"ignition":{"version":"3.2.0"},"systemd":{"units":[{"name":"b.service","enabled":true}]},"storage":{"files":[{"path":"/etc/b"}]}}`),
		fragment("30-c", "worker", "", func(s *mcfgv1.MachineConfigSpec) { s.KernelArguments = []string{"x"} }),
	}
	b := []mcfgv1.MachineConfig{a[2], a[0], a[1]}
	// The same JSON with its keys in another order.
	b[2].Spec.Config.Raw = []byte(`{"storage":{"files":[{"path":"/etc/b"}]},"systemd":{"units":[{"enabled":true,"name":"b.service"}]},"ignition":{"version":"3.2.0"}}`)
	name := func(fragments []mcfgv1.MachineConfig) string {
		out, _ := renderOf(t, fragments...)
		n, err := renderedName("worker", &out.spec)
		require.NoError(t, err)
		return n
	}
	first := name(a)
	assert.Regexp(t, `^rendered-worker-[0-9a-f]{32}$`, first)
	assert.Equal(t, first, name(b))
	for range 20 {
		assert.Equal(t, first, name(a), "the name must not depend on map iteration order")
	}
	c := append([]mcfgv1.MachineConfig{}, a...)
	c[0] = fragment("10-a", "worker", fileConfig("/etc/a", "changed"))
	assert.NotEqual(t, first, name(c))
}

// TestMergeIgnition2: a spec 2.2 fragment (MCO's docs/custom-pools.md
// example, a file on filesystem root) merges as its spec 3 translation
// with spec 3 fragments: no spec 2 key reaches the 3.5.0 rendering.
func TestMergeIgnition2(t *testing.T) {
	infra := fragment("50-infra", "infra", `{"ignition":{"version":"2.2.0"},"storage":{"files":[`+
		`{"contents":{"source":"data:,infra"},"filesystem":"root","mode":420,"path":"/etc/infratest"},`+
		`{"contents":{"source":"data:,two"},"filesystem":"root","path":"/etc/shared","overwrite":false}]},`+
		`"systemd":{"units":[{"name":"infra.service","enable":true,"contents":"[Unit]\n"}]},"networkd":{}}`)
	worker := fragment("10-worker", "worker", fileConfig("/etc/shared", "three"))
	out, ign := renderOf(t, worker, infra)
	raw := string(out.spec.Config.Raw)
	assert.NotContains(t, raw, `"filesystem"`)
	assert.NotContains(t, raw, `"networkd"`)
	assert.NotContains(t, raw, `"enable"`)
	assert.Equal(t, mcfgv1.IgnitionVersion, ign.Ignition.Version)
	files := map[string]mcfgv1.IgnitionFile{}
	for _, f := range ign.Storage.Files {
		files[f.Path] = f
	}
	data, err := files["/etc/infratest"].Data()
	require.NoError(t, err)
	assert.Equal(t, "infra", string(data))
	assert.True(t, *files["/etc/infratest"].Overwrite)
	data, err = files["/etc/shared"].Data()
	require.NoError(t, err)
	assert.Equal(t, "two", string(data), "the later (infra) fragment wins, translated")
	assert.False(t, *files["/etc/shared"].Overwrite, "an explicit overwrite: false is kept")
	require.Len(t, ign.Systemd.Units, 1)
	assert.True(t, *ign.Systemd.Units[0].Enabled)

	_, err = merge([]mcfgv1.MachineConfig{fragment("60-net", "infra",
		`{"ignition":{"version":"2.2.0"},"networkd":{"units":[{"name":"10-eth.network","contents":"[Match]\n"}]}}`)})
	assert.ErrorContains(t, err, "MachineConfig 60-net: Ignition 2.2.0 config cannot be translated to spec 3: networkd")
}
