package machineconfig

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzWritesStayInRoot: whatever the path of a MachineConfig's file and
// whatever links an attacker planted on the node beforehand (to /, to
// .., to the outside directly), putting the file and keeping its original
// never create or change anything outside the root.
func FuzzWritesStayInRoot(f *testing.F) {
	for _, seed := range []struct{ link, target, path string }{
		{"/etc/evil", "/", "/etc/evil/escaped"},
		{"/etc/evil", "../../..", "/etc/evil/escaped"},
		{"/etc/evil", "OUTSIDE", "/etc/evil/escaped"},
		{"/usr/local", "/var/usrlocal", "/usr/local/bin/tool"},
		{"/etc/a", "b", "/etc/a/c/d"},
		{"/etc/loop", "/etc/loop", "/etc/loop/x"},
		{"/etc/x", "/dev/null", "/etc/x"},
	} {
		f.Add(seed.link, seed.target, seed.path)
	}
	f.Fuzz(func(t *testing.T, link, target, p string) {
		base := t.TempDir()
		root, outside, state := filepath.Join(base, "root"), filepath.Join(base, "outside"), filepath.Join(base, "state")
		for _, d := range []string{root, outside, state} {
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		target = strings.ReplaceAll(target, "OUTSIDE", outside)
		if lp, err := nodePath(link); err == nil && !strings.ContainsRune(lp, 0) {
			at := filepath.Join(root, filepath.FromSlash(lp))
			_ = os.MkdirAll(filepath.Dir(at), 0o755)
			_ = os.Symlink(target, at)
		}
		np, err := nodePath(p)
		if err != nil || strings.ContainsRune(np, 0) {
			return
		}
		rec := &record{}
		_ = keepOriginal(root, state, rec, np)
		_ = put(root, write{path: np, contents: []byte("x"), mode: 0o644, uid: -1, gid: -1})
		_ = filepath.WalkDir(outside, func(path string, d fs.DirEntry, err error) error {
			if path != outside {
				t.Fatalf("link %s -> %q, path %q: %s was created outside the root", link, target, p, path)
			}
			return err
		})
		entries, err := os.ReadDir(base)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if n := e.Name(); n != "root" && n != "outside" && n != "state" {
				t.Fatalf("link %s -> %q, path %q: %s was created beside the root", link, target, p, n)
			}
		}
	})
}
