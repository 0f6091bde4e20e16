package main

import (
	"time"

	"github.com/spf13/pflag"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// timeoutFlags are the manager's machine timeouts, for the deadlines "why"
// reports. They default to the manager's defaults (MCM's); a Machine's own
// spec fields win, as in the manager.
type timeoutFlags struct {
	creation, health, drain time.Duration
	nodeConditions          []string
}

func (t *timeoutFlags) addFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&t.creation, "machine-creation-timeout", 20*time.Minute, "the manager's --machine-creation-timeout")
	fs.DurationVar(&t.health, "machine-health-timeout", 10*time.Minute, "the manager's --machine-health-timeout")
	fs.DurationVar(&t.drain, "machine-drain-timeout", 2*time.Hour, "the manager's --machine-drain-timeout")
	fs.StringSliceVar(&t.nodeConditions, "node-conditions", []string{"KernelDeadlock", "ReadonlyFilesystem", "DiskPressure", "NetworkUnavailable"}, "the manager's --node-conditions")
}

func machineConfig(m *v1alpha1.Machine) v1alpha1.MachineConfiguration {
	if m.Spec.MachineConfiguration == nil {
		return v1alpha1.MachineConfiguration{}
	}
	return *m.Spec.MachineConfiguration
}

func (t *timeoutFlags) creationTimeout(m *v1alpha1.Machine) time.Duration {
	if d := machineConfig(m).MachineCreationTimeout; d != nil && d.Duration > 0 {
		return d.Duration
	}
	return t.creation
}

func (t *timeoutFlags) healthTimeout(m *v1alpha1.Machine) time.Duration {
	if d := machineConfig(m).MachineHealthTimeout; d != nil && d.Duration > 0 {
		return d.Duration
	}
	return t.health
}

func (t *timeoutFlags) drainTimeout(m *v1alpha1.Machine) time.Duration {
	if d := machineConfig(m).MachineDrainTimeout; d != nil && d.Duration >= 0 {
		return d.Duration
	}
	return t.drain
}

func healthTimeoutDisabled(m *v1alpha1.Machine) bool {
	d := machineConfig(m).DisableHealthTimeout
	return d != nil && *d
}
