package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// writeFileAtomic writes data to path atomically (see replaceFile).
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	return replaceFile(path, bytes.NewReader(data), perm)
}

// replaceFile writes the content of r to path through a temporary file in
// the same directory, synced and then renamed over path, and syncs the
// directory, so that a reader (or a crash) sees either the old file or the
// new one in full, never a torn one. The file gets mode perm (set with
// chmod, so the umask does not change it).
func replaceFile(path string, r io.Reader, perm os.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".machina-tmp-*")
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
	return syncDir(dir)
}

// replaceSymlink points path at target, through a temporary link renamed
// over path.
func replaceSymlink(path, target string) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".machina-tmp-link")
	_ = os.Remove(tmp) // left by an attempt that was cut short
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return syncDir(filepath.Dir(path))
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
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
