// Package hostexec starts the node's own programs for the agent: systemctl,
// the shell of --apply-command and --os-update-command, an OS update tool.
//
// In the DaemonSet the agent's image holds nothing but the agent, and the
// host's root is mounted at --root. A program named there (chroot, sh,
// systemctl) does not exist in the container, so with --chroot the agent
// starts these programs inside --root with chroot(2), as the host's own
// programs, the way OpenShift's machine-config-daemon runs them inside
// /rootfs. Without --chroot (a host install, the demo's per-node roots)
// they are found on the agent's own PATH.
package hostexec

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	securejoin "github.com/cyphar/filepath-securejoin"
)

// searchPath is where a program named without a slash is looked for inside
// the root: the host's PATH is not the agent's, so it is a fixed list, the
// one systemd gives its services.
var searchPath = []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}

// Runner starts programs on the host.
type Runner struct {
	// Root is the directory programs run inside with chroot(2); "" runs
	// them in the agent's own filesystem.
	Root string
}

// Command is exec.CommandContext for a program of the host: with a Root,
// name is found inside it (on searchPath when it has no slash) and the
// program starts there, in "/", with SYSTEMD_IGNORE_CHROOT=1 in env so
// that systemctl acts on the running system instead of declining as it
// does in a chroot. env is the environment added to the agent's. A name
// that cannot be found is the returned Cmd's error, reported by Run.
func (r Runner) Command(ctx context.Context, env []string, name string, args ...string) *exec.Cmd {
	if r.Root == "" {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Env = append(os.Environ(), env...)
		return cmd
	}
	file, err := r.lookPath(name)
	cmd := exec.CommandContext(ctx, file, args...)
	if err != nil {
		cmd.Err = err
		return cmd
	}
	// The program sees the name it was called by, not where its link led:
	// systemd's tools act on argv[0].
	cmd.Args[0] = name
	cmd.Dir = "/"
	cmd.Env = append(append(os.Environ(), "SYSTEMD_IGNORE_CHROOT=1"), env...)
	if err := chroot(cmd, r.Root); err != nil {
		cmd.Err = err
	}
	return cmd
}

// SeenRoot is the path the started program sees for root: "/" inside a
// chroot into it.
func (r Runner) SeenRoot(root string) string {
	if r.Root != "" && path.Clean(r.Root) == path.Clean(root) {
		return "/"
	}
	return root
}

// lookPath finds name inside the root, resolving links as the host would
// with the root as "/" (an absolute link on the host, such as
// /usr/bin/systemctl -> /lib/systemd/systemctl, means a path inside the
// root, and no link leads out of it).
func (r Runner) lookPath(name string) (string, error) {
	candidates := []string{name}
	if !strings.Contains(name, "/") {
		candidates = candidates[:0]
		for _, dir := range searchPath {
			candidates = append(candidates, path.Join(dir, name))
		}
	}
	for _, c := range candidates {
		full, err := securejoin.SecureJoin(r.Root, c)
		if err != nil {
			return "", fmt.Errorf("looking for %s in %s: %w", name, r.Root, err)
		}
		fi, err := os.Stat(full)
		if err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return "/" + strings.TrimPrefix(strings.TrimPrefix(full, filepath.Clean(r.Root)), "/"), nil
		}
		if err != nil && !isNotFound(err) {
			return "", fmt.Errorf("looking for %s in %s: %w", name, r.Root, err)
		}
	}
	if strings.Contains(name, "/") {
		return "", fmt.Errorf("%s: no executable file of that name in %s", name, r.Root)
	}
	return "", fmt.Errorf("%s: no executable file of that name in %s under %s", name, r.Root, strings.Join(searchPath, ":"))
}

// isNotFound: a missing file, or a path through a file (a /sbin that is a
// file), is a candidate that is not there.
func isNotFound(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}
