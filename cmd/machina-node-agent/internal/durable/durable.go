// Package durable writes the node agent's files so that a reader, or a
// crash, sees either the old content or the new one in full, never a torn
// file: a temporary file in the same directory, synced, renamed over the
// path, and the directory synced. The agent's JSON records go through it.
package durable

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// WriteFile writes data to path atomically (see Replace).
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return Replace(path, bytes.NewReader(data), perm)
}

// Replace writes the content of r to path through a temporary file in the
// same directory, synced and then renamed over path, and syncs the
// directory. The file gets mode perm (set with chmod, so the umask does not
// change it).
func Replace(path string, r io.Reader, perm os.FileMode) error {
	return ReplaceOwned(path, r, perm, -1, -1)
}

// ReplaceOwned is Replace with the file owned by uid and gid (-1 keeps the
// agent's own), set before the rename so that the file never appears with
// another owner.
func ReplaceOwned(path string, r io.Reader, perm os.FileMode, uid, gid int) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, tempName(filepath.Base(path), "*"))
	if err != nil {
		return err
	}
	tmpName := tmp.Name()
	done := false
	defer func() {
		if !done {
			_ = tmp.Close()
			_ = os.Remove(tmpName)
		}
	}()
	if _, err := io.Copy(tmp, r); err != nil {
		return err
	}
	if uid >= 0 || gid >= 0 {
		if err := tmp.Chown(uid, gid); err != nil {
			return err
		}
	}
	// After the chown, which clears setuid and setgid bits.
	if err := tmp.Chmod(perm); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmpName, path); err != nil {
		return err
	}
	done = true
	return SyncDir(dir)
}

// Symlink points path at target, through a temporary link renamed over
// path.
func Symlink(path, target string) error {
	tmp := filepath.Join(filepath.Dir(path), tempName(filepath.Base(path), "link"))
	_ = os.Remove(tmp) // left by an attempt that was cut short
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// tempMark is in the name of every temporary file or link the agent
// creates: what CleanTemps removes at start.
const tempMark = ".machina-tmp-"

// tempName is the temporary name of a write of base (suffix makes it
// unique).
func tempName(base, suffix string) string { return "." + base + tempMark + suffix }

// IsTemp tells whether a file name is one of the agent's temporary files.
func IsTemp(name string) bool {
	return strings.HasPrefix(name, ".") && strings.Contains(name, tempMark)
}

// CleanTempsUnder removes every temporary file the agent left anywhere
// under dir (its own state directory), and returns their paths.
func CleanTempsUnder(dir string) ([]string, error) {
	var removed []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.IsDir() && IsTemp(d.Name()) {
			if err := Remove(p); err != nil {
				return err
			}
			removed = append(removed, p)
		}
		return nil
	})
	return removed, err
}

// Remove removes path; a path that is already gone is no error.
func Remove(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// SyncDir makes a rename in dir durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer func() { _ = d.Close() }()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing directory %s: %w", dir, err)
	}
	return nil
}

// LoadJSON reads the JSON record at path (what names it in errors); a
// missing file is the zero record.
func LoadJSON[T any](path, what string) (T, error) {
	var r T
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return r, fmt.Errorf("reading %s: %w", what, err)
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("reading %s %s: %w", what, path, err)
	}
	return r, nil
}

// SaveJSON replaces the JSON record at path atomically and durably.
func SaveJSON[T any](path, what string, r T) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := WriteFile(path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", what, err)
	}
	return nil
}
