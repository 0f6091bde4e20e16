package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
)

// unsupportedIgnition are the sections of an Ignition config this agent
// cannot apply in place (MCO's daemon refuses the same, and more): a
// configuration that has them is Unreconcilable.
var unsupportedIgnition = []string{"disks", "raid", "filesystems", "directories", "links", "luks"}

// loadPlan reads the rendered MachineConfig name and turns it into the
// files and units to write. unreconcilable reports a configuration the
// agent can never apply in place (as opposed to one it failed to read).
func (a *mcoAgent) loadPlan(ctx context.Context, name string) (p plan, unreconcilable bool, err error) {
	mc := &mcv1.MachineConfig{}
	if err := a.reader.Get(ctx, client.ObjectKey{Name: name}, mc); err != nil {
		return plan{}, false, isNotFound(err, name)
	}
	if why := unsupported(mc); why != "" {
		return plan{}, true, fmt.Errorf("%s cannot be applied in place: %s", name, why)
	}
	ign, err := mcv1.ParseIgnition(mc.Spec.Config.Raw)
	if err != nil {
		return plan{}, true, fmt.Errorf("%s: %w", name, err)
	}
	p, err = planOf(ign)
	if err != nil {
		return plan{}, true, fmt.Errorf("%s: %w", name, err)
	}
	return p, false, nil
}

// unsupported says what of mc the agent cannot apply, or "".
func unsupported(mc *mcv1.MachineConfig) string {
	var storage struct {
		Storage map[string]json.RawMessage `json:"storage"`
		Passwd  map[string]json.RawMessage `json:"passwd"`
	}
	if len(mc.Spec.Config.Raw) > 0 {
		if err := json.Unmarshal(mc.Spec.Config.Raw, &storage); err != nil {
			return "spec.config is not an object: " + err.Error()
		}
	}
	var found []string
	for _, section := range unsupportedIgnition {
		if raw, ok := storage.Storage[section]; ok && !emptyJSON(raw) {
			found = append(found, "storage."+section)
		}
	}
	if len(found) > 0 {
		return strings.Join(found, ", ") + " (this agent writes files and systemd units only)"
	}
	return ""
}

func emptyJSON(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s == "" || s == "null" || s == "[]" || s == "{}"
}

// planOf turns the files and units of a parsed Ignition config into a plan,
// checking every path and name (ParseIgnition checks the config's form;
// this checks that nothing reaches out of the root).
func planOf(ign *mcv1.Ignition) (plan, error) {
	var p plan
	for _, f := range ign.Storage.Files {
		path, err := nodePath(f.Path)
		if err != nil {
			return plan{}, fmt.Errorf("file %s: %w", f.Path, err)
		}
		data, err := f.Data()
		if err != nil {
			return plan{}, err
		}
		p.files = append(p.files, planFile{path: path, mode: fileMode(f.FileMode()), contents: data})
	}
	for _, u := range ign.Systemd.Units {
		if err := unitName(u.Name); err != nil {
			return plan{}, err
		}
		pu := planUnit{name: u.Name, contents: u.Contents, enabled: u.Enabled, mask: u.Mask != nil && *u.Mask}
		for _, d := range u.Dropins {
			if err := unitName(d.Name); err != nil {
				return plan{}, fmt.Errorf("unit %s: %w", u.Name, err)
			}
			contents := ""
			if d.Contents != nil {
				contents = *d.Contents
			}
			pu.dropins = append(pu.dropins, planDropin{name: d.Name, contents: contents})
		}
		p.units = append(p.units, pu)
	}
	return p, nil
}

// fileMode turns Ignition's Unix mode (07777) into Go's: the permission
// bits, and setuid, setgid and sticky, which Go keeps elsewhere.
func fileMode(unix int) os.FileMode {
	m := os.FileMode(unix & 0o777)
	if unix&0o4000 != 0 {
		m |= os.ModeSetuid
	}
	if unix&0o2000 != 0 {
		m |= os.ModeSetgid
	}
	if unix&0o1000 != 0 {
		m |= os.ModeSticky
	}
	return m
}
