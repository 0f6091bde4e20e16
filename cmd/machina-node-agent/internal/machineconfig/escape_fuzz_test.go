package machineconfig

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
)

// FuzzWritesStayInRoot: whatever links an attacker planted on the node
// beforehand (to /, to .., to the outside directly, to the absolute host
// path of a unit) and whatever the MachineConfig asks for (a file at any
// path, a unit with a drop-in enabled through its [Install] section, the
// core user's SSH keys under any home), applying it, then applying an
// empty configuration (originals restored, the unit back to its preset)
// never creates, changes or removes anything outside the root. The
// outside holds a host unit, as a node's real /etc would.
//
// OUTSIDE in a link's target stands for the outside directory: a link to
// the agent's host, which the agent must never follow.
func FuzzWritesStayInRoot(f *testing.F) {
	for _, seed := range []struct {
		link, target, path string
		kind               uint8
	}{
		{"/etc/evil", "/", "/etc/evil/escaped", kindFile},
		{"/etc/evil", "../../..", "/etc/evil/escaped", kindFile},
		{"/etc/evil", "OUTSIDE", "/etc/evil/escaped", kindFile},
		{"/usr/local", "/var/usrlocal", "/usr/local/bin/tool", kindFile},
		{"/etc/a", "b", "/etc/a/c/d", kindFile},
		{"/etc/loop", "/etc/loop", "/etc/loop/x", kindFile},
		{"/etc/x", "/dev/null", "/etc/x", kindFile},
		{"/etc/x", "OUTSIDE/etc/systemd/system/host.service", "/etc/x", kindFile},
		// Units: the unit file, its drop-in directory, its enablement
		// links' directory, or all of /etc/systemd/system leading out.
		{"/etc/systemd/system", "OUTSIDE/etc/systemd/system", "app.service", kindUnit},
		{"/etc/systemd/system/multi-user.target.wants", "OUTSIDE/etc/systemd/system", "app.service", kindUnit},
		{"/etc/systemd/system/multi-user.target.wants/host.service", "OUTSIDE/etc/systemd/system/host.service", "host.service", kindUnit},
		{"/etc/systemd/system/host.service", "OUTSIDE/etc/systemd/system/host.service", "host.service", kindUnit},
		{"/etc/systemd/system/host.service.d", "OUTSIDE/etc/systemd/system", "host.service", kindUnit},
		{"/etc/systemd/system/web.service", "OUTSIDE/etc/systemd/system/host.service", "app.service", kindUnit},
		// SSH keys: the home, or its .ssh, leading out.
		{"/home/core", "OUTSIDE", "/home/core", kindSSH},
		{"/home/core/.ssh", "OUTSIDE/etc", "/home/core", kindSSH},
		{"/home", "../../..", "/home/core", kindSSH},
		{"/var/home", "OUTSIDE", "/var/home/core", kindSSH},
	} {
		f.Add(seed.link, seed.target, seed.path, seed.kind)
	}
	f.Fuzz(func(t *testing.T, link, target, p string, kind uint8) {
		base := t.TempDir()
		root, outside, state := filepath.Join(base, "root"), filepath.Join(base, "outside"), filepath.Join(base, "state")
		for _, d := range []string{root, outside, state, filepath.Join(outside, "etc/systemd/system"), filepath.Join(root, "etc")} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		hostUnit := filepath.Join(outside, "etc/systemd/system/host.service")
		if err := os.WriteFile(hostUnit, []byte("[Install]\nWantedBy=multi-user.target\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		home := "/home/core"
		if kind%3 == kindSSH {
			home = p
		}
		if err := os.WriteFile(filepath.Join(root, "etc/passwd"), []byte("core:x:1000:1000::"+home+":/bin/sh\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		target = strings.ReplaceAll(target, "OUTSIDE", outside)
		if lp, err := nodePath(link); err == nil {
			at := filepath.Join(root, filepath.FromSlash(lp))
			_ = os.MkdirAll(filepath.Dir(at), 0o755)
			_ = os.Symlink(target, at)
		}
		before := snapshot(t, outside)

		a := New(nil, nil, Options{Root: root, StateDir: state, Executor: &Executor{}})
		ign := &mcv1.Ignition{}
		switch kind % 3 {
		case kindFile:
			ign.Storage.Files = []mcv1.IgnitionFile{{Path: p, Contents: mcv1.IgnitionFileContents{Source: ptr("data:,x")}}}
		case kindUnit:
			ign.Systemd.Units = []mcv1.IgnitionUnit{{Name: p, Enabled: ptr(true),
				Contents: ptr("[Install]\nWantedBy=multi-user.target\nAlias=web.service\n"),
				Dropins:  []mcv1.IgnitionDropin{{Name: "10-x.conf", Contents: ptr("[Service]\n")}}}}
		case kindSSH:
			ign.Passwd.Users = []mcv1.IgnitionUser{{Name: mcv1.CoreUser, SSHAuthorizedKeys: []string{"ssh-ed25519 AAAA"}}}
		}
		ign.Ignition.Version = "3.5.0"
		if ign.Validate() != nil {
			return // refused at render: no node is given it
		}
		rec := &record{}
		for _, d := range []*desired{{name: "rendered-1", ign: ign}, {name: "rendered-2", ign: &mcv1.Ignition{}}} {
			if ws, err := a.writes(d, rec); err == nil {
				_ = a.apply(t.Context(), d, rec, ws)
			}
		}
		if after := snapshot(t, outside); after != before {
			t.Fatalf("link %s -> %q, %s %q: the outside changed:\nbefore:\n%s\nafter:\n%s", link, target, kindName[kind%3], p, before, after)
		}
		entries, err := os.ReadDir(base)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if n := e.Name(); n != "root" && n != "outside" && n != "state" {
				t.Fatalf("link %s -> %q, %s %q: %s was created beside the root", link, target, kindName[kind%3], p, n)
			}
		}
	})
}

// What the fuzzed MachineConfig asks for at the fuzzed path.
const (
	kindFile uint8 = iota // a file at the path
	kindUnit              // a unit of that name, enabled, with a drop-in
	kindSSH               // the core user's SSH keys, the path its home
)

var kindName = []string{"file", "unit", "SSH keys of home"}

// snapshot lists every entry under dir with its type, mode and content or
// link target.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		b.WriteString(p + " " + info.Mode().String())
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			b.WriteString(" -> " + target)
		case info.Mode().IsRegular():
			data, _ := os.ReadFile(p)
			b.WriteString(" " + string(data))
		}
		b.WriteString("\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
