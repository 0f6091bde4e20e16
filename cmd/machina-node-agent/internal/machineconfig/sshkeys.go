package machineconfig

import (
	"fmt"
	"path"
	"strings"

	"github.com/machina-io/machina/cmd/machina-node-agent/internal/durable"
	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
)

// sshKeysFile is where, under the core user's home, its SSH keys go: the
// file Ignition and MCO write, read by sshd through the
// ssh-key-dir AuthorizedKeysCommand of Fedora CoreOS and RHCOS.
const sshKeysFile = ".ssh/authorized_keys.d/ignition"

// sshKeyWrites is the core user's SSH keys as a write: the keys one per
// line, mode 0600, owned by core. No keys, no write: the file goes back to
// what it was.
func sshKeyWrites(root *durable.Root, users []mcv1.IgnitionUser) ([]write, error) {
	var keys []string
	for _, u := range users {
		if u.Name == mcv1.CoreUser {
			keys = append(keys, u.SSHAuthorizedKeys...)
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	core, err := lookupUser(root, mcv1.CoreUser)
	if err != nil {
		return nil, fmt.Errorf("passwd.users (core).sshAuthorizedKeys: %w", err)
	}
	p, err := nodePath(path.Join(core.home, sshKeysFile))
	if err != nil {
		return nil, fmt.Errorf("passwd.users (core).sshAuthorizedKeys: home %w", err)
	}
	for _, k := range keys {
		if strings.ContainsAny(k, "\n\r") {
			return nil, fmt.Errorf("passwd.users (core).sshAuthorizedKeys: a key spans several lines")
		}
	}
	return []write{fileWrite(p, []byte(strings.Join(keys, "\n")+"\n"), 0o600, core.uid, core.gid, origin{Kind: originSSHKey})}, nil
}

// ensureSSHDirs creates ~core/.ssh and its authorized_keys.d, mode 0700 and
// owned by core, as sshd requires, when they are missing.
func ensureSSHDirs(root *durable.Root, keyFile string) error {
	core, err := lookupUser(root, mcv1.CoreUser)
	if err != nil {
		return err
	}
	for _, dir := range []string{path.Dir(path.Dir(keyFile)), path.Dir(keyFile)} {
		if _, err := root.Lstat(dir); err == nil {
			continue
		}
		if err := root.MkdirAll(path.Dir(dir), 0o755); err != nil {
			return err
		}
		if err := root.Mkdir(dir, 0o700, core.uid, core.gid); err != nil {
			return err
		}
	}
	return nil
}
