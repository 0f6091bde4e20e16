package hostexec

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostRoot builds a node root holding a static recorder at
// /lib/systemd/systemctl, reached from /usr/bin/systemctl by an absolute
// link as on a Debian host, and returns it.
func hostRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	bin := filepath.Join(root, "lib", "systemd", "systemctl")
	build := exec.Command("go", "build", "-o", bin, "./testdata/recorder")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "building the recorder: %s", out)
	require.NoError(t, os.MkdirAll(filepath.Join(root, "usr", "bin"), 0o755))
	require.NoError(t, os.Symlink("/lib/systemd/systemctl", filepath.Join(root, "usr", "bin", "systemctl")))
	return root
}

// TestCommandRunsInsideTheRoot: the program of the host is found on the
// host's PATH inside the root, through an absolute link that only means
// something there, and runs chrooted in "/" with SYSTEMD_IGNORE_CHROOT set
// and the caller's environment. chroot(2) needs root, as the agent has in
// its DaemonSet.
func TestCommandRunsInsideTheRoot(t *testing.T) {
	root := hostRoot(t)
	r := Runner{Root: root}
	cmd := r.Command(context.Background(), []string{"EXTRA=yes"}, "systemctl", "restart", "kubelet.service")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)

	calls, err := os.ReadFile(filepath.Join(root, "calls"))
	require.NoError(t, err, "the recorder did not write /calls inside the root: it did not run chrooted")
	assert.Equal(t, "restart kubelet.service wd=/ ignore-chroot=1 extra=yes\n", string(calls))
	_, err = os.Stat("/calls")
	assert.ErrorIs(t, err, os.ErrNotExist, "the recorder wrote to the agent's own /")

	// A failure reaches the caller with the program's output.
	out, err = r.Command(context.Background(), nil, "/usr/bin/systemctl", "fail").CombinedOutput()
	require.Error(t, err)
	assert.Contains(t, string(out), "unit fail.service not found")
}

// TestCommandNamesAMissingProgram: a program the root lacks (the
// DaemonSet's image has no shell or chroot) is an error naming it and the
// root, before anything starts.
func TestCommandNamesAMissingProgram(t *testing.T) {
	root := hostRoot(t)
	r := Runner{Root: root}
	err := r.Command(context.Background(), nil, "sh", "-c", "true").Run()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "sh: no executable file of that name in "+root)

	err = r.Command(context.Background(), nil, "/bin/sh", "-c", "true").Run()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "/bin/sh: no executable file of that name in "+root)

	// A link that leaves the root is not followed out of it.
	require.NoError(t, os.Symlink("../../../../../../../../bin/true", filepath.Join(root, "usr", "bin", "escape")))
	err = r.Command(context.Background(), nil, "escape").Run()
	require.Error(t, err, "a link out of the root was followed")
}

// TestCommandWithoutRoot: without a root the program is the agent's own,
// found on its PATH, in its working directory.
func TestCommandWithoutRoot(t *testing.T) {
	cmd := Runner{}.Command(context.Background(), []string{"EXTRA=yes"}, "sh", "-c", `printf %s "$EXTRA"`)
	out, err := cmd.Output()
	require.NoError(t, err)
	assert.Equal(t, "yes", string(out))
	assert.Nil(t, cmd.SysProcAttr)
}

func TestSeenRoot(t *testing.T) {
	assert.Equal(t, "/", Runner{Root: "/host/"}.SeenRoot("/host"))
	assert.Equal(t, "/srv/node", Runner{}.SeenRoot("/srv/node"))
	assert.Equal(t, "/srv/node", Runner{Root: "/host"}.SeenRoot("/srv/node"))
	assert.True(t, strings.HasPrefix(searchPath[0], "/"))
}
