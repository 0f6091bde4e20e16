package durable

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	securejoin "github.com/cyphar/filepath-securejoin"
)

// Root is the node's file system under the agent's --root, seen as the node
// sees it: every node path ("/etc/x") is resolved as if root were /, so an
// absolute link (the image's /usr/local -> /var/usrlocal, an enablement link
// -> /etc/systemd/system/foo.service, one an attacker planted -> /) leads to
// the same place under root, never out of it.
//
// Two layers keep it there. Links are resolved component by component by
// securejoin, reading them through the root; and every operation then goes
// through an os.Root, which refuses any path or link that leaves the
// directory even if the tree changes between the resolution and the
// operation (a link swapped in makes the operation fail, not escape). The
// last element of a path is never followed when it is written, removed or
// read as a link: a link there is replaced, removed or read, not its target.
type Root struct {
	dir  string
	root *os.Root
}

// OpenRoot opens dir as the node's root.
func OpenRoot(dir string) (*Root, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &Root{dir: dir, root: r}, nil
}

// Close releases the root's directory.
func (r *Root) Close() error { return r.root.Close() }

// Dir is the host directory of the root.
func (r *Root) Dir() string { return r.dir }

// rootVFS lets securejoin read links through the os.Root: its paths are
// node paths ("/" joined with the node path, as securejoin builds them).
type rootVFS struct{ r *os.Root }

func (v rootVFS) Lstat(name string) (os.FileInfo, error) { return v.r.Lstat(rel(name)) }
func (v rootVFS) Readlink(name string) (string, error)   { return v.r.Readlink(rel(name)) }

// rel is node path p relative to the root, for os.Root ("." for the root).
func rel(p string) string {
	p = strings.TrimLeft(path.Clean("/"+p), "/")
	if p == "" {
		return "."
	}
	return p
}

// Resolve is node path p with every link on it resolved inside the root,
// the last one too: what the node reads at p.
func (r *Root) Resolve(p string) (string, error) {
	resolved, err := securejoin.SecureJoinVFS("/", p, rootVFS{r.root})
	if err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	return path.Clean("/" + resolved), nil
}

// Parent is node path p with the links of its directory resolved inside
// the root and its last element kept: the place a write of p replaces.
func (r *Root) Parent(p string) (string, error) {
	p = path.Clean("/" + p)
	if p == "/" {
		return p, nil
	}
	dir, err := r.Resolve(path.Dir(p))
	if err != nil {
		return "", err
	}
	return path.Join(dir, path.Base(p)), nil
}

// Lstat describes node path p itself (a link is not followed).
func (r *Root) Lstat(p string) (fs.FileInfo, error) {
	at, err := r.Parent(p)
	if err != nil {
		return nil, err
	}
	return r.root.Lstat(rel(at))
}

// Readlink is the target of the link at node path p.
func (r *Root) Readlink(p string) (string, error) {
	at, err := r.Parent(p)
	if err != nil {
		return "", err
	}
	return r.root.Readlink(rel(at))
}

// Open opens node path p for reading, links resolved inside the root.
func (r *Root) Open(p string) (*os.File, error) {
	at, err := r.Resolve(p)
	if err != nil {
		return nil, err
	}
	return r.root.Open(rel(at))
}

// OpenNoFollow opens node path p for reading unless it is a link (then
// the error says so): for reading a file the agent wrote there, which a
// link put in its place must not redirect.
func (r *Root) OpenNoFollow(p string) (*os.File, error) {
	at, err := r.Parent(p)
	if err != nil {
		return nil, err
	}
	return r.root.OpenFile(rel(at), os.O_RDONLY|noFollow, 0)
}

// ReadFile reads node path p, links resolved inside the root.
func (r *Root) ReadFile(p string) ([]byte, error) {
	f, err := r.Open(p)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	return io.ReadAll(f)
}

// ReadDir lists the directory at node path dir, links resolved inside the
// root; a missing directory lists nothing.
func (r *Root) ReadDir(dir string) ([]fs.DirEntry, error) {
	f, err := r.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	return f.ReadDir(-1)
}

// MkdirAll creates the directory at node path dir and its parents with
// perm, links on the way resolved inside the root.
func (r *Root) MkdirAll(dir string, perm os.FileMode) error {
	at, err := r.Resolve(dir)
	if err != nil {
		return err
	}
	return r.root.MkdirAll(rel(at), perm)
}

// Mkdir creates the directory at node path dir with perm (exactly: the
// umask does not change it) owned by uid and gid.
func (r *Root) Mkdir(dir string, perm os.FileMode, uid, gid int) error {
	at, err := r.Parent(dir)
	if err != nil {
		return err
	}
	if err := r.root.Mkdir(rel(at), perm); err != nil {
		return err
	}
	if err := r.root.Lchown(rel(at), uid, gid); err != nil {
		return err
	}
	return r.root.Chmod(rel(at), perm)
}

// Replace writes the content of src to node path p atomically (see
// ReplaceOwned), with mode perm and owned by uid and gid (-1 keeps the
// agent's own). A link at p is replaced, not followed. It returns the
// number of bytes written.
func (r *Root) Replace(p string, src io.Reader, perm os.FileMode, uid, gid int) (int64, error) {
	at, err := r.Parent(p)
	if err != nil {
		return 0, err
	}
	dir, base := path.Dir(at), path.Base(at)
	tmp, tmpName, err := r.createTemp(dir, base)
	if err != nil {
		return 0, err
	}
	done := false
	defer func() {
		if !done {
			_ = tmp.Close()
			_ = r.root.Remove(tmpName)
		}
	}()
	n, err := io.Copy(tmp, src)
	if err != nil {
		return n, err
	}
	if uid >= 0 || gid >= 0 {
		if err := tmp.Chown(uid, gid); err != nil {
			return n, err
		}
	}
	// After the chown, which clears setuid and setgid bits.
	if err := tmp.Chmod(perm); err != nil {
		return n, err
	}
	if err := tmp.Sync(); err != nil {
		return n, err
	}
	if err := tmp.Close(); err != nil {
		return n, err
	}
	if err := r.root.Rename(tmpName, rel(at)); err != nil {
		return n, err
	}
	done = true
	return n, r.syncDir(dir)
}

// createTemp creates a new temporary file beside node path dir/base (dir
// already resolved), named so that CleanTemps finds it.
func (r *Root) createTemp(dir, base string) (*os.File, string, error) {
	for range 10 {
		var b [6]byte
		_, _ = rand.Read(b[:])
		name := rel(path.Join(dir, tempName(base, hex.EncodeToString(b[:]))))
		f, err := r.root.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL|noFollow, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, name, err
	}
	return nil, "", fmt.Errorf("no free temporary name beside %s", path.Join(dir, base))
}

// Symlink points node path p at target (which is not resolved: it is what
// the node reads), through a temporary link renamed over p.
func (r *Root) Symlink(p, target string) error {
	at, err := r.Parent(p)
	if err != nil {
		return err
	}
	tmp := rel(path.Join(path.Dir(at), tempName(path.Base(at), "link")))
	_ = r.root.Remove(tmp) // left by an attempt that was cut short
	if err := r.root.Symlink(target, tmp); err != nil {
		return err
	}
	if err := r.root.Rename(tmp, rel(at)); err != nil {
		_ = r.root.Remove(tmp)
		return err
	}
	return r.syncDir(path.Dir(at))
}

// Remove removes node path p (a link, not its target); a path already
// gone is no error.
func (r *Root) Remove(p string) error {
	at, err := r.Parent(p)
	if err != nil {
		return err
	}
	if err := r.root.Remove(rel(at)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func (r *Root) syncDir(dir string) error {
	d, err := r.root.Open(rel(dir))
	if err != nil {
		return err
	}
	defer func() { _ = d.Close() }()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing directory %s: %w", dir, err)
	}
	return nil
}

// CleanTemps removes the temporary files and links a write cut short (the
// agent killed between creating and renaming them) left in the directory
// at node path dir, and returns their node paths. A missing directory has
// none.
func (r *Root) CleanTemps(dir string) ([]string, error) {
	at, err := r.Resolve(dir)
	if err != nil {
		return nil, err
	}
	entries, err := r.ReadDir(at)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, e := range entries {
		if !IsTemp(e.Name()) {
			continue
		}
		p := path.Join(at, e.Name())
		if err := r.root.Remove(rel(p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return removed, err
		}
		removed = append(removed, p)
	}
	return removed, nil
}
