package durable

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRootStaysInside: a write through an absolute link lands inside the
// root, as on the node; a link at the path itself is replaced, not
// followed, even when it points at a host file outside; a link swapped in
// on the way is refused rather than followed.
func TestRootStaysInside(t *testing.T) {
	base := t.TempDir()
	dir, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "var/usrlocal"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "usr"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "etc"), 0o755))
	require.NoError(t, os.Mkdir(outside, 0o755))
	host := filepath.Join(outside, "host.service")
	require.NoError(t, os.WriteFile(host, []byte("host"), 0o644))
	require.NoError(t, os.Symlink("/var/usrlocal", filepath.Join(dir, "usr/local")))
	require.NoError(t, os.Symlink(host, filepath.Join(dir, "etc/unit.service")))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "etc/out")))

	r, err := OpenRoot(dir)
	require.NoError(t, err)
	defer func() { _ = r.Close() }()

	_, err = r.Replace("/usr/local/tool", strings.NewReader("tool"), 0o755, -1, -1)
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(dir, "var/usrlocal/tool"))
	require.NoError(t, err)
	assert.Equal(t, "tool", string(data), "the absolute link resolves inside the root")

	_, err = r.Replace("/etc/unit.service", strings.NewReader("mine"), 0o644, -1, -1)
	require.NoError(t, err)
	data, err = os.ReadFile(host)
	require.NoError(t, err)
	assert.Equal(t, "host", string(data), "the link at the path is replaced, not followed")
	require.NoError(t, r.Remove("/etc/unit.service"))
	_, err = os.Stat(host)
	assert.NoError(t, err, "removing the path never removes a link's target")

	// /etc/out -> <outside> resolves to <root>/<outside>: created inside.
	require.NoError(t, r.MkdirAll("/etc/out/sub", 0o755))
	_, err = os.Stat(filepath.Join(outside, "sub"))
	assert.True(t, os.IsNotExist(err), "nothing is created outside")

	// The os.Root layer alone: a path that is a link out, as if swapped in
	// after the resolution, is refused.
	_, err = r.root.OpenFile("etc/out/x", os.O_CREATE|os.O_WRONLY, 0o644)
	assert.Error(t, err)
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "only the host's file is outside")
}

// TestCleanTemps: the temporary files and links a cut-short write leaves
// are removed, nothing else.
func TestCleanTemps(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "etc"), 0o755))
	for _, n := range []string{".a.conf.machina-tmp-123", ".b.machina-tmp-link", "a.conf", ".hidden"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "etc", n), nil, 0o600))
	}
	r, err := OpenRoot(dir)
	require.NoError(t, err)
	defer func() { _ = r.Close() }()
	removed, err := r.CleanTemps("/etc")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"/etc/.a.conf.machina-tmp-123", "/etc/.b.machina-tmp-link"}, removed)
	entries, err := os.ReadDir(filepath.Join(dir, "etc"))
	require.NoError(t, err)
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	assert.Equal(t, []string{".hidden", "a.conf"}, left)

	state := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(state, "originals/etc"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(state, "originals/etc/.x.machina-tmp-9"), nil, 0o600))
	gone, err := CleanTempsUnder(state)
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(state, "originals/etc/.x.machina-tmp-9")}, gone)
}
