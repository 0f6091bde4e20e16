package machineconfig

import (
	"fmt"
	"slices"
	"strings"

	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
)

// origin is what in a MachineConfig a change comes from: a file (Name is
// its path), a systemd unit (its name), the core user's SSH keys, the
// kernel arguments, or the OS (kernel type, OS image, extensions).
type origin struct {
	Kind string `json:"kind"`
	Name string `json:"name,omitempty"`
}

const (
	originFile   = "file"
	originUnit   = "unit"
	originSSHKey = "sshkey"
	originKargs  = "kernelArguments"
	originOS     = "os"
)

func (o origin) String() string {
	if o.Name == "" {
		return o.Kind
	}
	return o.Kind + " " + o.Name
}

// defaultPolicy is what a change does when the pool's policy says nothing
// of it: MCO's cluster defaults (docs/NodeDisruptionPolicy.md in
// openshift/machine-config-operator), and kubelet.conf restarting the
// kubelet, which reads it only at start. MCO's "Special" action for
// registries.conf is a reload of crio here. Anything else reboots.
var defaultPolicy = mcv1.NodeDisruptionPolicy{
	Files: []mcv1.NodeDisruptionPolicyFile{
		{Path: "/etc/mco/internal-registry-pull-secret.json", Actions: none()},
		{Path: "/var/lib/kubelet/config.json", Actions: none()},
		{Path: "/etc/kubernetes/kubelet-ca.crt", Actions: none()},
		{Path: "/etc/machine-config-daemon/no-reboot/containers-gpg.pub", Actions: reloadCrio},
		{Path: "/etc/containers/policy.json", Actions: reloadCrio},
		{Path: "/etc/containers/registries.conf", Actions: reloadCrio},
		{Path: "/etc/containers/registries.d", Actions: reloadCrio},
		{Path: "/etc/kubernetes/kubelet.conf", Actions: restart("kubelet.service")},
	},
	SSHKey: &mcv1.NodeDisruptionPolicySSHKey{Actions: none()},
}

func none() []mcv1.NodeDisruptionAction {
	return []mcv1.NodeDisruptionAction{{Type: mcv1.ActionNone}}
}

var reloadCrio = []mcv1.NodeDisruptionAction{{Type: mcv1.ActionReload, Reload: &mcv1.NodeDisruptionService{ServiceName: "crio.service"}}}

func restart(unit string) []mcv1.NodeDisruptionAction {
	return []mcv1.NodeDisruptionAction{{Type: mcv1.ActionRestart, Restart: &mcv1.NodeDisruptionService{ServiceName: unit}}}
}

var reboot = []mcv1.NodeDisruptionAction{{Type: mcv1.ActionReboot}}

// actionsFor returns the actions a change of o takes: the pool's policy
// first, then the defaults, else a reboot. Kernel arguments and the OS
// always reboot.
func actionsFor(pool *mcv1.NodeDisruptionPolicy, o origin) []mcv1.NodeDisruptionAction {
	for _, p := range []*mcv1.NodeDisruptionPolicy{pool, &defaultPolicy} {
		if p == nil {
			continue
		}
		switch o.Kind {
		case originFile:
			best := -1
			for i, f := range p.Files {
				if (o.Name == f.Path || strings.HasPrefix(o.Name, strings.TrimSuffix(f.Path, "/")+"/")) &&
					(best < 0 || len(f.Path) > len(p.Files[best].Path)) {
					best = i
				}
			}
			if best >= 0 {
				return p.Files[best].Actions
			}
		case originUnit:
			for _, u := range p.Units {
				if u.Name == o.Name {
					return u.Actions
				}
			}
		case originSSHKey:
			if p.SSHKey != nil {
				return p.SSHKey.Actions
			}
		}
	}
	return reboot
}

// step is one systemctl call of an activation.
type step struct {
	Verb string `json:"verb"` // daemon-reload, reload or restart
	Unit string `json:"unit,omitempty"`
}

func (s step) String() string {
	if s.Unit == "" {
		return s.Verb
	}
	return s.Verb + " " + s.Unit
}

// plan is the least activation of a set of changes, as MCO's daemon
// computes it: a reboot if any change asks for one (it drains first);
// else a drain if any asks for one; and the daemon-reload (always, when a
// unit changed: systemd reads unit files only then), reloads and restarts,
// each once, in that order.
func plan(config string, pool *mcv1.NodeDisruptionPolicy, changes []origin) (act activation, drain bool) {
	act.Config = config
	var reloads, restarts []string
	daemonReload := false
	for _, o := range changes {
		if o.Kind == originUnit {
			daemonReload = true
		}
		for _, a := range actionsFor(pool, o) {
			switch a.Type {
			case mcv1.ActionReboot:
				act.Reboot = true
			case mcv1.ActionDrain:
				drain = true
			case mcv1.ActionDaemonReload:
				daemonReload = true
			case mcv1.ActionReload:
				if a.Reload != nil && !slices.Contains(reloads, a.Reload.ServiceName) {
					reloads = append(reloads, a.Reload.ServiceName)
				}
			case mcv1.ActionRestart:
				if a.Restart != nil && !slices.Contains(restarts, a.Restart.ServiceName) {
					restarts = append(restarts, a.Restart.ServiceName)
				}
			}
		}
	}
	var summary []string
	if act.Reboot {
		act.Summary = "drain, reboot"
		return act, true
	}
	if drain {
		summary = append(summary, "drain")
	}
	if daemonReload {
		act.Steps = append(act.Steps, step{Verb: "daemon-reload"})
	}
	for _, u := range reloads {
		if !slices.Contains(restarts, u) { // a restart reloads too
			act.Steps = append(act.Steps, step{Verb: "reload", Unit: u})
		}
	}
	for _, u := range restarts {
		act.Steps = append(act.Steps, step{Verb: "restart", Unit: u})
	}
	for _, s := range act.Steps {
		summary = append(summary, s.String())
	}
	if len(summary) == 0 {
		summary = []string{"none"}
	}
	act.Summary = strings.Join(summary, ", ")
	return act, drain
}

// describe lists changes for a log line.
func describe(changes []origin) string {
	var out []string
	for _, o := range changes {
		if s := o.String(); !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	if len(out) > 10 {
		out = append(out[:10], fmt.Sprintf("and %d more", len(out)-10))
	}
	return strings.Join(out, ", ")
}
