package v1_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	mcfgv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
)

// sshKeys22 is the spec.config of MCO's docs/Update-SSHKeys.md example
// ("ssh-workers-01") as its older revisions wrote it, with Ignition 2.2.0.
const sshKeys22 = `
ignition:
  version: 2.2.0
passwd:
  users:
  - name: core
    sshAuthorizedKeys:
    - ssh-rsa ABC123....
    - ssh-rsa XYZ7890....
`

func translated(t *testing.T, config string) map[string]any {
	t.Helper()
	raw, err := yaml.YAMLToJSON([]byte(config))
	require.NoError(t, err)
	out, err := mcfgv1.IgnitionV3(raw)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(out, &m))
	return m
}

func TestIgnitionV3SSHKeys(t *testing.T) {
	assert.Equal(t, map[string]any{
		"ignition": map[string]any{"version": mcfgv1.IgnitionVersion},
		"passwd": map[string]any{"users": []any{map[string]any{
			"name": "core", "sshAuthorizedKeys": []any{"ssh-rsa ABC123....", "ssh-rsa XYZ7890...."}}}},
	}, translated(t, sshKeys22))

	raw, err := yaml.YAMLToJSON([]byte(sshKeys22))
	require.NoError(t, err)
	ign, err := mcfgv1.ParseIgnition(raw)
	require.NoError(t, err)
	assert.Equal(t, mcfgv1.IgnitionVersion, ign.Ignition.Version)
	require.Len(t, ign.Passwd.Users, 1)
	assert.Equal(t, []string{"ssh-rsa ABC123....", "ssh-rsa XYZ7890...."}, ign.Passwd.Users[0].SSHAuthorizedKeys)
}

// TestIgnitionV3Files: ign-converter's v24tov31 rules for files.
func TestIgnitionV3Files(t *testing.T) {
	got := translated(t, `{"ignition":{"version":"2.2.0"},"storage":{
		"filesystems":[{"name":"root","mount":{"device":"/dev/disk/by-label/root","format":"xfs"}}],
		"files":[
			{"filesystem":"root","path":"/etc/a","mode":420,"contents":{"source":"data:,a","verification":{"hash":"sha512-00"}},
			 "user":{"id":0},"group":{"name":"wheel"}},
			{"filesystem":"root","path":"/etc/b","overwrite":false,"append":false,"contents":{"source":"data:,b","compression":""}}]}}`)
	assert.Equal(t, map[string]any{
		"ignition": map[string]any{"version": mcfgv1.IgnitionVersion},
		"storage": map[string]any{"files": []any{
			map[string]any{"path": "/etc/a", "mode": float64(420), "overwrite": true,
				"contents": map[string]any{"source": "data:,a", "verification": map[string]any{"hash": "sha512-00"}},
				"user":     map[string]any{"id": float64(0)}, "group": map[string]any{"name": "wheel"}},
			map[string]any{"path": "/etc/b", "overwrite": false, "contents": map[string]any{"source": "data:,b", "compression": ""}},
		}},
	}, got, "filesystem root and the root file system dropped, overwrite true where unset (spec 2's default), append false dropped")
}

// TestIgnitionV3Units: enable (deprecated) becomes enabled, an explicit
// enabled winning; mask, contents and dropins are kept.
func TestIgnitionV3Units(t *testing.T) {
	got := translated(t, `{"ignition":{"version":"2.2.0"},"systemd":{"units":[
		{"name":"a.service","enable":true,"contents":"[Unit]\n","dropins":[{"name":"10-x.conf","contents":"[Service]\n"}]},
		{"name":"b.service","enable":true,"enabled":false},
		{"name":"c.service","enable":false,"mask":true}]}}`)
	assert.Equal(t, []any{
		map[string]any{"name": "a.service", "enabled": true, "contents": "[Unit]\n",
			"dropins": []any{map[string]any{"name": "10-x.conf", "contents": "[Service]\n"}}},
		map[string]any{"name": "b.service", "enabled": false},
		map[string]any{"name": "c.service", "mask": true},
	}, got["systemd"].(map[string]any)["units"])
}

// TestIgnitionV3Refusals: what spec 3 (or a running node) cannot take is
// refused, naming the spec 2 field.
func TestIgnitionV3Refusals(t *testing.T) {
	for config, want := range map[string]string{
		`{"ignition":{"version":"2.2.0"},"networkd":{"units":[{"name":"10-eth.network","contents":"[Match]\n"}]}}`:                 "networkd (Ignition spec 3 has no networkd section",
		`{"ignition":{"version":"2.2.0"},"storage":{"filesystems":[{"name":"var","mount":{"device":"/dev/sdb","format":"xfs"}}]}}`: `storage.filesystems[0] (file system "var"`,
		`{"ignition":{"version":"2.2.0"},"storage":{"files":[{"filesystem":"var","path":"/log/x"}]}}`:                              "storage.files[0].filesystem (var: only files on the root file system are written)",
		`{"ignition":{"version":"2.2.0"},"storage":{"files":[{"filesystem":"root","path":"/etc/x","append":true}]}}`:               "storage.files[0].append (files are replaced, never appended to)",
		`{"ignition":{"version":"2.2.0"},"passwd":{"users":[{"name":"core","create":{"uid":1000}}]}}`:                              "passwd.users[0].create (deprecated in Ignition spec 2",
		`{"ignition":{"version":"2.4.0"}}`: `unsupported Ignition version "2.4.0" (supported: 2.0.0, 2.1.0, 2.2.0, translated to 3.5.0, and 3.0.0 to 3.5.0)`,
		`{"ignition":{"version":"2.2.0","config":{"append":[{"source":"https://example.com/c"}]}}}`:                                    "ignition.config (read by Ignition at first boot only)",
		`{"ignition":{"version":"2.2.0"},"storage":{"directories":[{"filesystem":"root","path":"/etc/d"}]}}`:                           "storage.directories (only files and systemd units are written)",
		`{"ignition":{"version":"2.2.0"},"storage":{"files":[{"filesystem":"root","path":"/etc/x","bogus":1}]}}`:                       `unknown field "bogus"`,
		`{"ignition":{"version":"2.2.0"},"passwd":{"users":[{"name":"core","passwordHash":"$6$x"}]}}`:                                  "passwd.users[0].passwordHash (of the user \"core\" only sshAuthorizedKeys is applied)",
		`{"ignition":{"version":"2.2.0"},"storage":{"files":[{"filesystem":"root","path":"/x","contents":{"source":"https://e/x"}}]}}`: `unsupported URL scheme "https"`,
	} {
		_, err := mcfgv1.ParseIgnition([]byte(config))
		assert.ErrorContains(t, err, want, config)
	}
}

// TestIgnitionV3Spec3Unchanged: a spec 3 config is not touched, spec 2
// keys in it included (ParseIgnition refuses them).
func TestIgnitionV3Spec3Unchanged(t *testing.T) {
	for _, config := range []string{
		`{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/x","filesystem":"root"}]}}`,
		``, `null`, `[1]`, `{"ignition":{}}`,
	} {
		out, err := mcfgv1.IgnitionV3([]byte(config))
		require.NoError(t, err)
		assert.Equal(t, config, string(out))
	}
	_, err := mcfgv1.ParseIgnition([]byte(`{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/x","filesystem":"root"}]}}`))
	assert.ErrorContains(t, err, `unknown field "filesystem"`)
}
