package machineconfig

import (
	"bufio"
	"bytes"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/machina-io/machina/cmd/machina-node-agent/internal/durable"
	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
)

// The systemd layout, as node paths: where the agent writes units, and
// where the image's units and presets are.
const unitDir = mcv1.UnitDir

var (
	vendorUnitDirs = []string{"/usr/lib/systemd/system", "/lib/systemd/system"}
	presetDirs     = []string{"/etc/systemd/system-preset", "/usr/lib/systemd/system-preset", "/lib/systemd/system-preset"}
)

// unitWrites is what the units of a configuration put on the node: unit
// files and drop-ins, the masks (links to /dev/null), and the enablement
// links `systemctl enable` would make from the unit's [Install] section
// (WantedBy=, RequiredBy=, Alias=), or their removal for a disabled unit.
func unitWrites(root *durable.Root, units []mcv1.IgnitionUnit) ([]write, error) {
	var out []write
	for _, u := range units {
		o := origin{Kind: originUnit, Name: u.Name}
		unitPath := path.Join(unitDir, u.Name)
		masked := u.Mask != nil && *u.Mask
		switch {
		case masked:
			out = append(out, write{path: unitPath, link: "/dev/null", origin: o})
		case u.Contents != nil:
			out = append(out, fileWrite(unitPath, []byte(*u.Contents), 0o644, 0, 0, o))
		}
		for _, d := range u.Dropins {
			contents := ""
			if d.Contents != nil {
				contents = *d.Contents
			}
			out = append(out, fileWrite(path.Join(unitDir, u.Name+".d", d.Name), []byte(contents), 0o644, 0, 0, o))
		}
		if u.Enabled == nil || masked {
			continue
		}
		links, err := enablement(root, u)
		if err != nil {
			return nil, fmt.Errorf("systemd.units (%s).enabled: %w", u.Name, err)
		}
		if *u.Enabled {
			out = append(out, links...)
			continue
		}
		disabled, err := disableLinks(root, u.Name, links)
		if err != nil {
			return nil, fmt.Errorf("systemd.units (%s).enabled: %w", u.Name, err)
		}
		out = append(out, disabled...)
	}
	return out, nil
}

// enablement returns the links that enable u, each pointing at the unit
// file that will be in effect: the configuration's own, else the one in
// /etc/systemd/system, else the image's. A unit with no file anywhere, or
// whose file has no [Install] section, cannot be enabled.
func enablement(root *durable.Root, u mcv1.IgnitionUnit) ([]write, error) {
	o := origin{Kind: originUnit, Name: u.Name}
	file, contents, err := unitFile(root, u)
	if err != nil {
		return nil, err
	}
	wantedBy, requiredBy, alias := installSection(contents)
	if len(wantedBy)+len(requiredBy)+len(alias) == 0 {
		if u.Enabled != nil && !*u.Enabled {
			return nil, nil
		}
		return nil, fmt.Errorf("%s has no [Install] WantedBy=, RequiredBy= or Alias=: nothing to enable", file)
	}
	for _, name := range slices.Concat(wantedBy, requiredBy, alias) {
		if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\\x00") {
			return nil, fmt.Errorf("%s: [Install] names %q, which is not a unit name", file, name)
		}
	}
	var out []write
	for _, t := range wantedBy {
		out = append(out, write{path: path.Join(unitDir, t+".wants", u.Name), link: file, origin: o})
	}
	for _, t := range requiredBy {
		out = append(out, write{path: path.Join(unitDir, t+".requires", u.Name), link: file, origin: o})
	}
	for _, a := range alias {
		out = append(out, write{path: path.Join(unitDir, a), link: file, origin: o})
	}
	return out, nil
}

// unitFile finds the file of unit u that is in effect (a template's for
// an instance, foo@.service for foo@bar.service) and its contents.
func unitFile(root *durable.Root, u mcv1.IgnitionUnit) (string, []byte, error) {
	if u.Contents != nil {
		return path.Join(unitDir, u.Name), []byte(*u.Contents), nil
	}
	names := []string{u.Name}
	if at := strings.IndexByte(u.Name, '@'); at > 0 {
		if dot := strings.LastIndexByte(u.Name, '.'); dot > at+1 {
			names = append(names, u.Name[:at+1]+u.Name[dot:])
		}
	}
	for _, name := range names {
		for _, dir := range append([]string{unitDir}, vendorUnitDirs...) {
			p := path.Join(dir, name)
			data, err := root.ReadFile(p)
			if isNotExist(err) {
				continue
			}
			if err != nil {
				return "", nil, err
			}
			return p, data, nil
		}
	}
	return "", nil, fmt.Errorf("the unit has no contents and no unit file on the node (%s, %s)", unitDir, strings.Join(vendorUnitDirs, ", "))
}

// installSection reads WantedBy=, RequiredBy= and Alias= of a unit file's
// [Install] section (each a space-separated list; an empty assignment
// resets the list, as in systemd).
func installSection(contents []byte) (wantedBy, requiredBy, alias []string) {
	s := bufio.NewScanner(bytes.NewReader(contents))
	section := ""
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			section = line
			continue
		}
		if section != "[Install]" {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		var list *[]string
		switch strings.TrimSpace(key) {
		case "WantedBy":
			list = &wantedBy
		case "RequiredBy":
			list = &requiredBy
		case "Alias":
			list = &alias
		default:
			continue
		}
		fields := strings.Fields(value)
		if len(fields) == 0 {
			*list = nil
		}
		for _, f := range fields {
			if !slices.Contains(*list, f) {
				*list = append(*list, f)
			}
		}
	}
	return wantedBy, requiredBy, alias
}

// disableLinks is the removal of every enablement link of unit name in
// /etc/systemd/system (in any *.wants or *.requires directory), and of the
// links its [Install] section would make.
func disableLinks(root *durable.Root, name string, wouldMake []write) ([]write, error) {
	o := origin{Kind: originUnit, Name: name}
	seen := map[string]bool{}
	var out []write
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, write{path: p, absent: true, origin: o})
		}
	}
	entries, err := root.ReadDir(unitDir)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".wants") && !strings.HasSuffix(e.Name(), ".requires") {
			continue
		}
		p := path.Join(unitDir, e.Name(), name)
		if _, err := root.Lstat(p); err == nil {
			add(p)
		}
	}
	for _, w := range wouldMake {
		add(w.path)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out, nil
}

// presetEnabled tells whether systemd's presets on the node enable the
// unit name: the first line of the preset files (sorted by file name, a
// file in /etc hiding one of the same name elsewhere) whose pattern
// matches decides; no match enables, as in systemd.
func presetEnabled(root *durable.Root, name string) (bool, error) {
	files := map[string]string{}
	for i := len(presetDirs) - 1; i >= 0; i-- {
		entries, err := root.ReadDir(presetDirs[i])
		if err != nil {
			return false, err
		}
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".preset") {
				files[e.Name()] = path.Join(presetDirs[i], e.Name())
			}
		}
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		data, err := root.ReadFile(files[n])
		if err != nil {
			return false, err
		}
		for _, line := range strings.Split(string(data), "\n") {
			fields := strings.Fields(line)
			if len(fields) < 2 || strings.HasPrefix(fields[0], "#") {
				continue
			}
			if ok, _ := path.Match(fields[1], name); ok {
				switch fields[0] {
				case "enable":
					return true, nil
				case "disable":
					return false, nil
				}
			}
		}
	}
	return true, nil
}

// applyPreset puts unit name's enablement back to what the node's presets
// say, as `systemctl preset` does, once no configuration sets it.
func applyPreset(root *durable.Root, name string) error {
	enable, err := presetEnabled(root, name)
	if err != nil {
		return err
	}
	u := mcv1.IgnitionUnit{Name: name, Enabled: &enable}
	links, err := enablement(root, u)
	if err != nil {
		if !enable {
			links = nil
		} else {
			// A unit gone from the node (its file was the configuration's)
			// has nothing to enable.
			return nil
		}
	}
	if !enable {
		if links, err = disableLinks(root, name, links); err != nil {
			return err
		}
	}
	for _, w := range links {
		if err := put(root, w); err != nil {
			return err
		}
	}
	return nil
}
