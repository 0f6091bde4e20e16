package mcrender

import (
	"fmt"
	"slices"
)

// ignitionListKeys names the field that identifies an entry of each keyed
// list of an Ignition v3 config. Entries with the same key are merged field
// by field, the later fragment winning, as Ignition's own config merge
// does (github.com/coreos/ignition config/merge); other entries are
// appended in order.
var ignitionListKeys = map[string]string{
	"storage.files":         "path",
	"storage.directories":   "path",
	"storage.links":         "path",
	"storage.disks":         "device",
	"storage.filesystems":   "device",
	"storage.raid":          "name",
	"storage.luks":          "name",
	"systemd.units":         "name",
	"systemd.units.dropins": "name",
	"passwd.users":          "name",
	"passwd.groups":         "name",
}

// nodePathLists are the lists whose entries are filesystem nodes: a path is
// one of a file, a directory or a link, never two.
var nodePathLists = []string{"storage.files", "storage.directories", "storage.links"}

// ignitionMerger merges Ignition configs, kept as generic JSON so that
// every field survives, including the ones machina does not model.
type ignitionMerger struct {
	merged map[string]any
	// nodes remembers, for each filesystem path, which list defines it and
	// in which fragment, to refuse a path that is a file in one fragment and
	// a directory or link in another.
	nodes map[string]nodeDef
}

type nodeDef struct{ list, fragment string }

func newIgnitionMerger() *ignitionMerger {
	return &ignitionMerger{merged: map[string]any{}, nodes: map[string]nodeDef{}}
}

// add merges the config of fragment over what was merged so far.
func (m *ignitionMerger) add(fragment string, config map[string]any) error {
	if err := m.checkNodes(fragment, config); err != nil {
		return err
	}
	m.merged = mergeValue(m.merged, config, "").(map[string]any)
	return nil
}

// checkNodes refuses a path defined twice in one fragment, or as a
// different kind of node (file, directory, link) than before.
func (m *ignitionMerger) checkNodes(fragment string, config map[string]any) error {
	storage, _ := config["storage"].(map[string]any)
	own := map[string]string{}
	for _, list := range nodePathLists {
		entries, _ := storage[list[len("storage."):]].([]any)
		for _, e := range entries {
			entry, _ := e.(map[string]any)
			p, _ := entry["path"].(string)
			if p == "" {
				continue
			}
			kind := kindOf(list)
			if prev, ok := own[p]; ok {
				if prev == kind {
					return fmt.Errorf("%s %s is defined twice", kind, p)
				}
				return fmt.Errorf("%s is both a %s and a %s", p, prev, kind)
			}
			own[p] = kind
			if def, ok := m.nodes[p]; ok && def.list != list {
				return fmt.Errorf("%s is a %s here but a %s in MachineConfig %s", p, kind, kindOf(def.list), def.fragment)
			}
		}
	}
	for p, kind := range own {
		m.nodes[p] = nodeDef{list: "storage." + listOf(kind), fragment: fragment}
	}
	return checkUnitDuplicates(config)
}

// checkUnitDuplicates refuses a unit, or a dropin of a unit, defined twice
// in one fragment: Ignition refuses such a config.
func checkUnitDuplicates(config map[string]any) error {
	systemd, _ := config["systemd"].(map[string]any)
	units, _ := systemd["units"].([]any)
	seen := map[string]bool{}
	for _, u := range units {
		unit, _ := u.(map[string]any)
		name, _ := unit["name"].(string)
		if seen[name] {
			return fmt.Errorf("unit %s is defined twice", name)
		}
		seen[name] = true
		dropins, _ := unit["dropins"].([]any)
		seenDropin := map[string]bool{}
		for _, d := range dropins {
			dropin, _ := d.(map[string]any)
			dname, _ := dropin["name"].(string)
			if seenDropin[dname] {
				return fmt.Errorf("unit %s: dropin %s is defined twice", name, dname)
			}
			seenDropin[dname] = true
		}
	}
	return nil
}

func kindOf(list string) string {
	switch list {
	case "storage.files":
		return "file"
	case "storage.directories":
		return "directory"
	}
	return "link"
}

func listOf(kind string) string {
	switch kind {
	case "file":
		return "files"
	case "directory":
		return "directories"
	}
	return "links"
}

// mergeValue merges over onto base at the dotted path of the config:
// objects field by field, keyed lists entry by entry, lists of plain values
// as a union in order; anything else is replaced by over. A null in over
// leaves base as it is.
func mergeValue(base, over any, path string) any {
	if over == nil {
		return base
	}
	switch o := over.(type) {
	case map[string]any:
		b, ok := base.(map[string]any)
		if !ok {
			return deepCopy(o)
		}
		out := make(map[string]any, len(b)+len(o))
		for k, v := range b {
			out[k] = v
		}
		for k, v := range o {
			out[k] = mergeValue(b[k], v, join(path, k))
		}
		return out
	case []any:
		b, ok := base.([]any)
		if !ok {
			return deepCopy(o)
		}
		if key, keyed := ignitionListKeys[path]; keyed {
			return mergeKeyed(b, o, key, path)
		}
		if allPlain(b) && allPlain(o) {
			out := slices.Clone(b)
			for _, v := range o {
				if !slices.Contains(out, v) {
					out = append(out, v)
				}
			}
			return out
		}
		return deepCopy(o)
	}
	return over
}

// mergeKeyed merges the entries of over into base by their key field.
func mergeKeyed(base, over []any, key, path string) []any {
	out := slices.Clone(base)
	for _, e := range over {
		entry, ok := e.(map[string]any)
		k, hasKey := entry[key]
		if !ok || !hasKey {
			out = append(out, deepCopy(e))
			continue
		}
		i := slices.IndexFunc(out, func(b any) bool {
			bm, ok := b.(map[string]any)
			return ok && bm[key] == k
		})
		if i < 0 {
			out = append(out, deepCopy(e))
			continue
		}
		out[i] = mergeValue(out[i], entry, path)
	}
	return out
}

func allPlain(list []any) bool {
	for _, v := range list {
		switch v.(type) {
		case map[string]any, []any:
			return false
		}
	}
	return true
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// deepCopy copies a generic JSON value, so that the merged config never
// shares a map or slice with a fragment.
func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}
