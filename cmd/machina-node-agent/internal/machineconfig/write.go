package machineconfig

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"syscall"

	"github.com/machina-io/machina/cmd/machina-node-agent/internal/durable"
	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
)

// write is one node path as a configuration wants it: a regular file with
// contents, mode and owner, a symbolic link to link, or absent. Origin is
// what in the MachineConfig asked for it (origin.go), which decides how a
// change of it is activated.
type write struct {
	path string
	// content opens the file's data, as often as needed: contents are
	// streamed from the configuration to the disk, never held whole (a
	// configuration may carry up to mcv1.MaxTotalFileSize of them). sum is
	// the data's SHA-256, in hex.
	content  func() (io.ReadCloser, error)
	sum      string
	mode     os.FileMode
	uid, gid int
	link     string
	absent   bool
	origin   origin
}

// fileWrite is a write of small data held in memory (a unit, a drop-in,
// the SSH keys, a boot entry).
func fileWrite(p string, data []byte, mode os.FileMode, uid, gid int, o origin) write {
	sum := sha256.Sum256(data)
	return write{path: p, content: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
		sum: hex.EncodeToString(sum[:]), mode: mode, uid: uid, gid: gid, origin: o}
}

// streamWrite is a write whose data open returns, hashed here in one pass
// that holds nothing.
func streamWrite(p string, open func() (io.ReadCloser, error), mode os.FileMode, uid, gid int, o origin) (write, error) {
	sum, err := hashOf(open)
	if err != nil {
		return write{}, err
	}
	return write{path: p, content: open, sum: sum, mode: mode, uid: uid, gid: gid, origin: o}, nil
}

// hashOf is the SHA-256 of what open returns, read as a stream.
func hashOf(open func() (io.ReadCloser, error)) (string, error) {
	r, err := open()
	if err != nil {
		return "", err
	}
	defer func() { _ = r.Close() }()
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
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
	return managedPath{Path: w.path, SHA256: w.sum, Mode: w.mode, UID: w.uid, GID: w.gid, Origin: w.origin}
}

// nodePath checks that p is a node path the agent may write (absolute,
// clean, within Linux's limits, staying on the node: a MachineConfig is
// user input, "/etc/../../x" must not reach out of --root).
func nodePath(p string) (string, error) {
	if err := mcv1.CheckNodePath(p); err != nil {
		return "", fmt.Errorf("%q: %w", p, err)
	}
	return p, nil
}

// differs tells whether the disk under root differs from w: whether
// putting w in place changes the node.
func differs(root *durable.Root, w write) (bool, error) {
	m := w.record()
	why, err := driftOf(root, m)
	return why != "", err
}

// put puts w in place under root: the file written atomically with its
// mode and owner, the link replaced, or the path removed. Directories on
// the way are created with mode 0755, owned by root. Every path resolves
// inside the root (durable.Root); a link at the path itself is replaced or
// removed, never followed.
func put(root *durable.Root, w write) error {
	if w.absent {
		return root.Remove(w.path)
	}
	if err := root.MkdirAll(path.Dir(w.path), 0o755); err != nil {
		return fmt.Errorf("creating the directory of %s: %w", w.path, err)
	}
	if info, err := root.Lstat(w.path); err == nil && info.IsDir() {
		return fmt.Errorf("%s exists and is a directory (remove it on the node, or the file from the configuration)", w.path)
	}
	if w.link != "" {
		return root.Symlink(w.path, w.link)
	}
	r, err := w.content()
	if err != nil {
		return err
	}
	defer func() { _ = r.Close() }()
	_, err = root.Replace(w.path, r, w.mode, w.uid, w.gid)
	return err
}

// driftOf says how the path under root differs from m, or "" when it is
// as the agent put it: a file edited, its mode or owner changed, removed,
// a link repointed, or an absent path that appeared.
func driftOf(root *durable.Root, m managedPath) (string, error) {
	info, err := root.Lstat(m.Path)
	switch {
	case m.Absent && isNotExist(err):
		return "", nil
	case m.Absent && err == nil:
		return "exists and should not", nil
	case isNotExist(err):
		return "was removed", nil
	case err != nil:
		return "cannot be reached: " + err.Error(), nil
	}
	if m.Link != "" {
		target, err := root.Readlink(m.Path)
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
	sum, err := hashOf(func() (io.ReadCloser, error) { return root.OpenNoFollow(m.Path) })
	if err != nil {
		return "", err
	}
	if sum != m.SHA256 {
		return "content changed", nil
	}
	return "", nil
}

// isNotExist: the path, or a directory on its way, is not there (a file
// where a directory should be counts: nothing is at the path).
func isNotExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// drift returns the first managed path whose state under root differs
// from what the agent put there, and how, or "" when everything is as
// written.
func drift(root *durable.Root, managed []managedPath) (string, string) {
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
