package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// CRDDir returns the directory of the generated CRD manifests, deploy/crds in
// the repository root. The root is the nearest directory above the working
// directory (a test runs in its package directory) that holds go.work; when
// there is none, for example for a test binary run from elsewhere, the
// search starts again from this source file's directory.
func CRDDir() (string, error) {
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if _, file, _, ok := runtime.Caller(0); ok {
		starts = append(starts, filepath.Dir(file))
	}
	for _, start := range starts {
		if root, ok := findRoot(start); ok {
			dir := filepath.Join(root, "deploy", "crds")
			if _, err := os.Stat(dir); err != nil {
				return "", fmt.Errorf("CRD directory: %w", err)
			}
			return dir, nil
		}
	}
	return "", errors.New("cannot find the repository root (a directory with go.work) above " +
		fmt.Sprint(starts))
}

// findRoot walks up from dir to the first directory that contains go.work.
func findRoot(dir string) (string, bool) {
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}
