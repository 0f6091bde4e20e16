package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRemoveStaleWorkDirs(t *testing.T) {
	tmp := t.TempDir()

	// A process that has exited: its pid is free (until reused, which a
	// test cannot rule out but which only keeps a directory).
	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	deadPID := dead.Process.Pid

	mk := func(name, pid string) string {
		dir := filepath.Join(tmp, name)
		require.NoError(t, os.Mkdir(dir, 0o700))
		if pid != "" {
			require.NoError(t, os.WriteFile(filepath.Join(dir, pidFile), []byte(pid), 0o600))
		}
		return dir
	}
	stale := mk(workDirPrefix+"stale", strconv.Itoa(deadPID))
	live := mk(workDirPrefix+"live", strconv.Itoa(os.Getpid()))
	starting := mk(workDirPrefix+"starting", "")
	garbage := mk(workDirPrefix+"garbage", "not a pid")
	other := mk("someone-else", strconv.Itoa(deadPID))

	removeStaleWorkDirs(tmp)

	assert.NoDirExists(t, stale, "the directory of a demo that is gone is removed")
	assert.DirExists(t, live, "a running demo keeps its directory")
	assert.DirExists(t, starting, "a directory without a pid file may be a demo that is starting")
	assert.DirExists(t, garbage)
	assert.DirExists(t, other, "only the demo's own directories are touched")
}

func TestParseFlags(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", "")
	_, err := parseFlags(nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "hack/envtest-assets.sh")

	c, err := parseFlags([]string{"--assets=rel/assets", "--keep", "--timeout=1m"})
	require.NoError(t, err)
	assert.True(t, c.keep)
	assert.True(t, filepath.IsAbs(c.assets), "paths are made absolute: %s", c.assets)

	_, err = parseFlags([]string{"--assets=x", "extra"})
	assert.Error(t, err)
	_, err = parseFlags([]string{"--assets=x", "--timeout=0s"})
	assert.Error(t, err)
}

func TestAssetName(t *testing.T) {
	assert.Equal(t, "etcd", assetName("/tmp/machina-demo-1/bin/etcd"))
	assert.Equal(t, "kube-apiserver", assetName("kube-apiserver"))
	assert.Empty(t, assetName("/usr/bin/machina-demo"))
	assert.Empty(t, assetName("etcdctl"))
}
