package machineconfig

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	securejoin "github.com/cyphar/filepath-securejoin"
	"github.com/machina-io/machina/cmd/machina-node-agent/internal/durable"
)

// write is one node path as a configuration wants it: a regular file with
// contents, mode and owner, a symbolic link to link, or absent. Origin is
// what in the MachineConfig asked for it (origin.go), which decides how a
// change of it is activated.
type write struct {
	path     string
	contents []byte
	mode     os.FileMode
	uid, gid int
	link     string
	absent   bool
	origin   origin
}

// managedPath is one node path in the agent's record: what it put there
// (the content's SHA-256, the mode and owner, the link's target, or its
// absence), so that drift is found without asking the API server for the
// configuration again.
type managedPath struct {
	Path   string      `json:"path"`
	SHA256 string      `json:"sha256,omitempty"`
	Mode   os.FileMode `json:"mode,omitempty"`
	UID    int         `json:"uid,omitempty"`
	GID    int         `json:"gid,omitempty"`
	Link   string      `json:"link,omitempty"`
	Absent bool        `json:"absent,omitempty"`
	Origin origin      `json:"origin"`
}

func (w write) record() managedPath {
	switch {
	case w.absent:
		return managedPath{Path: w.path, Absent: true, Origin: w.origin}
	case w.link != "":
		return managedPath{Path: w.path, Link: w.link, Origin: w.origin}
	}
	sum := sha256.Sum256(w.contents)
	return managedPath{Path: w.path, SHA256: hex.EncodeToString(sum[:]), Mode: w.mode, UID: w.uid, GID: w.gid, Origin: w.origin}
}

// nodePath checks that p is an absolute, clean node path that stays on the
// node (a MachineConfig is user input: "/etc/../../x" must not reach out of
// --root), and returns it cleaned.
func nodePath(p string) (string, error) {
	if !strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("path %q is not absolute", p)
	}
	if slices.Contains(strings.Split(p, "/"), "..") {
		return "", fmt.Errorf("path %q contains \"..\"", p)
	}
	clean := path.Clean(p)
	if clean == "/" {
		return "", fmt.Errorf("path %q names the root directory", p)
	}
	return clean, nil
}

// under is the host path of node path p under root. Symbolic links on the
// way are resolved as if root were /, as the node sees them (an image's
// /usr/local -> /var/usrlocal lands in the root's /var/usrlocal), so that
// no link carries a write out of the root. The last element is not
// followed: it is what gets replaced.
func under(root, p string) (string, error) {
	dir, err := securejoin.SecureJoin(root, path.Dir(p))
	if err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	return filepath.Join(dir, path.Base(p)), nil
}

// resolve is the host path of node path p under root with every symbolic
// link resolved inside root, the last one too: for reading what the node
// reads (a unit file that is an alias, a preset linked to /dev/null).
func resolve(root, p string) (string, error) {
	at, err := securejoin.SecureJoin(root, p)
	if err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	return at, nil
}

// differs tells whether the disk under root differs from w: whether
// putting w in place changes the node.
func differs(root string, w write) (bool, error) {
	m := w.record()
	why, err := driftOf(root, m)
	return why != "", err
}

// put puts w in place under root: the file written atomically with its
// mode and owner, the link replaced, or the path removed. Directories on
// the way are created with mode 0755, owned by root.
func put(root string, w write) error {
	at, err := under(root, w.path)
	if err != nil {
		return err
	}
	if w.absent {
		return durable.Remove(at)
	}
	if err := os.MkdirAll(filepath.Dir(at), 0o755); err != nil {
		return fmt.Errorf("%s: %w", w.path, err)
	}
	if info, err := os.Lstat(at); err == nil && info.IsDir() {
		return fmt.Errorf("%s exists and is a directory", w.path)
	}
	if w.link != "" {
		return durable.Symlink(at, w.link)
	}
	return durable.ReplaceOwned(at, bytes.NewReader(w.contents), w.mode, w.uid, w.gid)
}

// driftOf says how the path under root differs from m, or "" when it is
// as the agent put it: a file edited, its mode or owner changed, removed,
// a link repointed, or an absent path that appeared.
func driftOf(root string, m managedPath) (string, error) {
	at, err := under(root, m.Path)
	if err != nil {
		return "cannot be reached: " + err.Error(), nil
	}
	info, err := os.Lstat(at)
	switch {
	case m.Absent && errors.Is(err, fs.ErrNotExist):
		return "", nil
	case m.Absent && err == nil:
		return "exists and should not", nil
	case errors.Is(err, fs.ErrNotExist):
		return "was removed", nil
	case err != nil:
		return "", err
	}
	if m.Link != "" {
		target, err := os.Readlink(at)
		if err != nil || target != m.Link {
			return "is no longer a link to " + m.Link, nil
		}
		return "", nil
	}
	if !info.Mode().IsRegular() {
		return "is no longer a regular file", nil
	}
	if got, want := info.Mode()&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky), m.Mode; got != want {
		return fmt.Sprintf("mode changed from %04o to %04o", unixMode(want), unixMode(got)), nil
	}
	if st, ok := info.Sys().(*syscall.Stat_t); ok && (int(st.Uid) != m.UID || int(st.Gid) != m.GID) {
		return fmt.Sprintf("owner changed from %d:%d to %d:%d", m.UID, m.GID, st.Uid, st.Gid), nil
	}
	data, err := os.ReadFile(at)
	if err != nil {
		return "", err
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != m.SHA256 {
		return "content changed", nil
	}
	return "", nil
}

// drift returns the first managed path whose state under root differs
// from what the agent put there, and how, or "" when everything is as
// written.
func drift(root string, managed []managedPath) (string, string) {
	for _, m := range managed {
		why, err := driftOf(root, m)
		if err != nil {
			return m.Path, "cannot be read: " + err.Error()
		}
		if why != "" {
			return m.Path, why
		}
	}
	return "", ""
}

// fileMode turns Ignition's Unix mode (07777) into Go's.
func fileMode(unix int) os.FileMode {
	m := os.FileMode(unix & 0o777)
	if unix&0o4000 != 0 {
		m |= os.ModeSetuid
	}
	if unix&0o2000 != 0 {
		m |= os.ModeSetgid
	}
	if unix&0o1000 != 0 {
		m |= os.ModeSticky
	}
	return m
}

// unixMode is fileMode's inverse, for messages.
func unixMode(m os.FileMode) int {
	u := int(m.Perm())
	if m&os.ModeSetuid != 0 {
		u |= 0o4000
	}
	if m&os.ModeSetgid != 0 {
		u |= 0o2000
	}
	if m&os.ModeSticky != 0 {
		u |= 0o1000
	}
	return u
}
