package v1

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Spec2Versions are the Ignition spec 2 versions IgnitionV3 translates,
// those MCO reads (its spec 2 parser takes 2.2 and the versions before it).
var Spec2Versions = []string{"2.0.0", "2.1.0", "2.2.0"}

// IgnitionV3 returns raw (a MachineConfig's spec.config) as an Ignition
// spec 3 config: a spec 3 config (or one that is not JSON, or empty)
// unchanged; a spec 2 config translated as MCO translates it (its
// ign-converter, spec v2.4 to v3.1), with the version
// IgnitionVersion. What spec 3 cannot express, or a running node cannot
// take, is refused with the spec 2 field named:
//
//   - the networkd section (spec 3 has none: write the units under
//     /etc/systemd/network as files);
//   - storage.filesystems other than "root" (the root file system is
//     implied in spec 3 and dropped), and files on another file system;
//   - files with append: true (files are replaced, never appended to);
//   - passwd.users[].create (deprecated in spec 2, gone in spec 3).
//
// The rest maps one to one: files lose "filesystem": "root" and get
// overwrite: true where unset (spec 2's default; spec 3's is false);
// user and group ({id} or {name}), mode, contents (source, compression,
// verification, httpHeaders) are kept; a unit's deprecated enable: true
// becomes enabled: true, an explicit enabled: false winning;
// ignition.config.append becomes ignition.config.merge; everything else
// is carried as it is, so that ParseIgnition refuses what it refuses in
// spec 3 (and unknown keys) with the same field names.
func IgnitionV3(raw []byte) ([]byte, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return raw, nil
	}
	var head struct {
		Ignition struct {
			Version string `json:"version"`
		} `json:"ignition"`
	}
	if err := json.Unmarshal(trimmed, &head); err != nil || !strings.HasPrefix(head.Ignition.Version, "2.") {
		return raw, nil
	}
	var cfg map[string]any
	if err := json.Unmarshal(trimmed, &cfg); err != nil {
		return nil, fmt.Errorf("config is not an Ignition config: %w", err)
	}
	out, err := translateIgnition2(cfg)
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

// translateIgnition2 translates a spec 2 config, read as generic JSON, to
// spec 3 (IgnitionV3). cfg is changed.
func translateIgnition2(cfg map[string]any) (map[string]any, error) {
	ign, _ := cfg["ignition"].(map[string]any)
	version, _ := ign["version"].(string)
	supported := false
	for _, v := range Spec2Versions {
		supported = supported || v == version
	}
	if !supported {
		return nil, fmt.Errorf("unsupported Ignition version %q (supported: %s, translated to %s, and 3.0.0 to 3.5.0)",
			version, strings.Join(Spec2Versions, ", "), IgnitionVersion)
	}
	var refused []string
	refuse := func(field, why string) { refused = append(refused, field+" ("+why+")") }

	ign["version"] = IgnitionVersion
	if c, ok := ign["config"].(map[string]any); ok {
		if app, ok := c["append"]; ok {
			c["merge"] = app
			delete(c, "append")
		}
	}
	if nd, ok := cfg["networkd"]; ok {
		if !emptyValue(nd) {
			refuse("networkd", "Ignition spec 3 has no networkd section; write the networkd units as files under /etc/systemd/network")
		}
		delete(cfg, "networkd")
	}
	if passwd, ok := cfg["passwd"].(map[string]any); ok {
		users, _ := passwd["users"].([]any)
		for i, u := range users {
			user, ok := u.(map[string]any)
			if !ok {
				continue
			}
			if c, ok := user["create"]; ok {
				if !emptyValue(c) {
					refuse(fmt.Sprintf("passwd.users[%d].create", i), "deprecated in Ignition spec 2 and gone in spec 3; of the user core only sshAuthorizedKeys is applied")
				}
				delete(user, "create")
			}
		}
	}
	if storage, ok := cfg["storage"].(map[string]any); ok {
		translateFilesystems2(storage, refuse)
		files, _ := storage["files"].([]any)
		for i, f := range files {
			file, ok := f.(map[string]any)
			if !ok {
				continue
			}
			field := fmt.Sprintf("storage.files[%d]", i)
			if fs, ok := file["filesystem"]; ok {
				if fs != "root" {
					refuse(field+".filesystem", fmt.Sprintf("%v: only files on the root file system are written", fs))
				}
				delete(file, "filesystem")
			}
			if app, ok := file["append"]; ok {
				if app == true {
					refuse(field+".append", "files are replaced, never appended to")
				}
				delete(file, "append")
			}
			if _, ok := file["overwrite"]; !ok {
				file["overwrite"] = true // spec 2's default
			}
		}
		for _, kind := range []string{"directories", "links"} {
			entries, _ := storage[kind].([]any)
			for _, e := range entries {
				if entry, ok := e.(map[string]any); ok && entry["filesystem"] == "root" {
					delete(entry, "filesystem")
				}
			}
		}
	}
	if systemd, ok := cfg["systemd"].(map[string]any); ok {
		units, _ := systemd["units"].([]any)
		for _, u := range units {
			unit, ok := u.(map[string]any)
			if !ok {
				continue
			}
			enable, hasEnable := unit["enable"]
			delete(unit, "enable")
			// enabled wins over the deprecated enable (ign-converter's rule).
			if _, set := unit["enabled"]; !set && hasEnable && enable == true {
				unit["enabled"] = true
			}
		}
	}
	if len(refused) > 0 {
		return nil, fmt.Errorf("Ignition %s config cannot be translated to spec 3: %s", version, strings.Join(refused, "; "))
	}
	return cfg, nil
}

// translateFilesystems2 drops the root file system, implied in spec 3,
// and refuses the others.
func translateFilesystems2(storage map[string]any, refuse func(field, why string)) {
	fss, ok := storage["filesystems"].([]any)
	if !ok {
		return
	}
	var kept []any
	for i, f := range fss {
		if fs, ok := f.(map[string]any); ok && fs["name"] == "root" {
			continue
		}
		name := ""
		if fs, ok := f.(map[string]any); ok {
			name, _ = fs["name"].(string)
		}
		refuse(fmt.Sprintf("storage.filesystems[%d]", i), fmt.Sprintf("file system %q: only the root file system maps to spec 3, and file systems cannot be changed on a running node", name))
		kept = append(kept, f)
	}
	if len(kept) == 0 {
		delete(storage, "filesystems")
		return
	}
	storage["filesystems"] = kept
}
