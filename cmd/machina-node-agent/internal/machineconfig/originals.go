package machineconfig

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/machina-io/machina/cmd/machina-node-agent/internal/durable"
)

// originalsDir is where, under --state-dir, the agent keeps the files it
// overwrote: originals/<node path>.
const originalsDir = "originals"

// original is what was at a node path before a configuration first wrote
// it: nothing (Absent), a link, or a file whose content is kept under
// originalsDir with its mode and owner here.
type original struct {
	Absent bool        `json:"absent,omitempty"`
	Link   string      `json:"link,omitempty"`
	Mode   os.FileMode `json:"mode,omitempty"`
	UID    int         `json:"uid,omitempty"`
	GID    int         `json:"gid,omitempty"`
}

// keepOriginal records what is at node path p under root before the first
// write, unless it is recorded already (then it is the image's, or the
// user's, and what is there now is a configuration's). The copy is on disk
// before the caller saves the record that names it.
func keepOriginal(root *durable.Root, stateDir string, rec *record, p string) error {
	if _, ok := rec.Originals[p]; ok {
		return nil
	}
	orig := original{}
	info, err := root.Lstat(p)
	switch {
	case isNotExist(err):
		orig.Absent = true
	case err != nil:
		return err
	case info.Mode()&fs.ModeSymlink != 0:
		if orig.Link, err = root.Readlink(p); err != nil {
			return err
		}
	case info.Mode().IsRegular():
		orig.Mode = info.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			orig.UID, orig.GID = int(st.Uid), int(st.Gid)
		}
		keep := filepath.Join(stateDir, originalsDir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(keep), 0o700); err != nil {
			return err
		}
		// Copied as a stream: an original may be large.
		f, err := root.OpenNoFollow(p)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }()
		if err := durable.Replace(keep, f, 0o600); err != nil {
			return fmt.Errorf("keeping the original of %s: %w", p, err)
		}
	case info.IsDir():
		return fmt.Errorf("%s exists and is a directory (remove it on the node, or the file from the configuration)", p)
	default:
		return fmt.Errorf("%s is a %s, not a file or a link: not replaced", p, info.Mode().Type())
	}
	if rec.Originals == nil {
		rec.Originals = map[string]original{}
	}
	rec.Originals[p] = orig
	return nil
}

// restoreOriginal puts back what was at p before the first configuration
// that wrote it: the image's file with its mode and owner, its link, or
// nothing. The copy is removed after.
func restoreOriginal(root *durable.Root, stateDir string, p string, orig original) error {
	w := write{path: p, absent: orig.Absent, link: orig.Link, mode: orig.Mode, uid: orig.UID, gid: orig.GID}
	keep := filepath.Join(stateDir, originalsDir, filepath.FromSlash(p))
	if !orig.Absent && orig.Link == "" {
		if _, err := os.Stat(keep); err != nil {
			return fmt.Errorf("the original of %s is lost: %w", p, err)
		}
		w.content = func() (io.ReadCloser, error) { return os.Open(keep) }
	}
	if err := put(root, w); err != nil {
		return fmt.Errorf("restoring %s: %w", p, err)
	}
	return durable.Remove(keep)
}
