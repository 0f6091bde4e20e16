package main

import (
	"bytes"
	"context"
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
)

// The systemd layout the agent writes units into, as paths on the node
// (under --root): unit files and their drop-in directories, and the
// symbolic link an enabled unit gets (what `systemctl enable` makes for a
// unit wanted by multi-user.target).
const (
	unitDir  = "/etc/systemd/system"
	wantsDir = unitDir + "/multi-user.target.wants"
)

// defaultFileMode is the mode of a file whose MachineConfig entry gives
// none (Ignition's default).
const defaultFileMode = 0o644

// plan is what a rendered MachineConfig asks the agent to put on the node:
// its files and systemd units, decoded from the API object
// (mcoplan.go). Paths are node paths ("/etc/foo"), written under --root.
type plan struct {
	files []planFile
	units []planUnit
}

type planFile struct {
	path     string
	mode     os.FileMode
	contents []byte
}

type planUnit struct {
	name     string
	contents *string
	// enabled is nil when the MachineConfig leaves the unit's enablement
	// alone.
	enabled *bool
	mask    bool
	dropins []planDropin
}

type planDropin struct {
	name     string
	contents string
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

// unitName checks a unit or drop-in name: one path element.
func unitName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\\x00") {
		return fmt.Errorf("unit or drop-in name %q is not a file name", name)
	}
	return nil
}

// writes lists the node paths p writes, each with its content and mode
// (for files, unit files and drop-ins) or its link target (enablement and
// masks): what the agent manages and what drift is checked against.
func (p plan) writes() []write {
	var out []write
	for _, f := range p.files {
		out = append(out, write{path: f.path, contents: f.contents, mode: f.mode})
	}
	for _, u := range p.units {
		unitPath := path.Join(unitDir, u.name)
		switch {
		case u.mask:
			out = append(out, write{path: unitPath, link: "/dev/null"})
		case u.contents != nil:
			out = append(out, write{path: unitPath, contents: []byte(*u.contents), mode: defaultFileMode})
		}
		for _, d := range u.dropins {
			out = append(out, write{path: path.Join(unitDir, u.name+".d", d.name), contents: []byte(d.contents), mode: defaultFileMode})
		}
		if u.enabled != nil && *u.enabled && !u.mask {
			out = append(out, write{path: path.Join(wantsDir, u.name), link: unitPath})
		}
	}
	return out
}

// disabled lists the enablement links that p removes: units it says are
// disabled.
func (p plan) disabled() []string {
	var out []string
	for _, u := range p.units {
		if (u.enabled != nil && !*u.enabled) || u.mask {
			out = append(out, path.Join(wantsDir, u.name))
		}
	}
	return out
}

// write is one node path the agent manages: a regular file with contents
// and mode, or a symbolic link to link.
type write struct {
	path     string
	contents []byte
	mode     os.FileMode
	link     string
}

// managedPath is one node path in the agent's record: what it wrote there
// (the content's SHA-256 and the mode, or the link's target), so that drift
// is found without asking the API server for the configuration again.
type managedPath struct {
	Path   string      `json:"path"`
	SHA256 string      `json:"sha256,omitempty"`
	Mode   os.FileMode `json:"mode,omitempty"`
	Link   string      `json:"link,omitempty"`
}

func (w write) record() managedPath {
	if w.link != "" {
		return managedPath{Path: w.path, Link: w.link}
	}
	sum := sha256.Sum256(w.contents)
	return managedPath{Path: w.path, SHA256: hex.EncodeToString(sum[:]), Mode: w.mode.Perm()}
}

// record is the list of managed paths of p, for the agent's record.
func (p plan) record() []managedPath {
	var out []managedPath
	for _, w := range p.writes() {
		out = append(out, w.record())
	}
	return out
}

// applyPlan writes p under root, each file atomically with its mode, and
// removes what the previous configuration wrote that p no longer has
// (previous: from the agent's record). It returns what p manages, for the
// record.
func applyPlan(ctx context.Context, root string, p plan, previous []managedPath) ([]managedPath, error) {
	var managed []managedPath
	written := map[string]bool{}
	for _, w := range p.writes() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		to := filepath.Join(root, filepath.FromSlash(w.path))
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return nil, fmt.Errorf("%s: %w", w.path, err)
		}
		var err error
		if w.link != "" {
			err = replaceSymlink(to, w.link)
		} else {
			if info, statErr := os.Lstat(to); statErr == nil && info.IsDir() {
				return nil, fmt.Errorf("%s exists and is a directory", w.path)
			}
			err = replaceFile(to, bytes.NewReader(w.contents), w.mode)
		}
		if err != nil {
			return nil, fmt.Errorf("writing %s: %w", w.path, err)
		}
		managed = append(managed, w.record())
		written[w.path] = true
	}
	for _, link := range p.disabled() {
		if err := removeIfExists(filepath.Join(root, filepath.FromSlash(link))); err != nil {
			return nil, fmt.Errorf("disabling %s: %w", link, err)
		}
	}
	for _, old := range previous {
		if written[old.Path] {
			continue
		}
		if err := removeIfExists(filepath.Join(root, filepath.FromSlash(old.Path))); err != nil {
			return nil, fmt.Errorf("removing %s, which the new configuration no longer has: %w", old.Path, err)
		}
	}
	return managed, nil
}

func removeIfExists(p string) error {
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// drift returns the first managed path whose state under root differs
// from what the agent wrote, and how, or "" when everything is as written:
// a file edited, its mode changed, removed, or a link repointed behind the
// agent's back.
func drift(root string, managed []managedPath) (string, string) {
	for _, m := range managed {
		at := filepath.Join(root, filepath.FromSlash(m.Path))
		info, err := os.Lstat(at)
		if errors.Is(err, fs.ErrNotExist) {
			return m.Path, "was removed"
		}
		if err != nil {
			return m.Path, "cannot be read: " + err.Error()
		}
		if m.Link != "" {
			target, err := os.Readlink(at)
			if err != nil || target != m.Link {
				return m.Path, "is no longer a link to " + m.Link
			}
			continue
		}
		if !info.Mode().IsRegular() {
			return m.Path, "is no longer a regular file"
		}
		if got := info.Mode().Perm(); got != m.Mode.Perm() {
			return m.Path, fmt.Sprintf("mode changed from %04o to %04o", m.Mode.Perm(), got)
		}
		data, err := os.ReadFile(at)
		if err != nil {
			return m.Path, "cannot be read: " + err.Error()
		}
		if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != m.SHA256 {
			return m.Path, "content changed"
		}
	}
	return "", ""
}
