// Package machineconfig is the node agent's side of machine configuration
// pools (docs/machine-config.md, "The node agent"): the MachineConfig
// handshake on the agent's own Node (agent.go), what a rendered
// MachineConfig puts on the node (desired.go: files, units.go,
// sshkeys.go, kargs.go, ossettings.go), how a change is activated
// (actions.go: MCO's node disruption policy, run through executor.go),
// the originals it keeps and restores (originals.go), its on-disk record
// (record.go), and the table of every MachineConfig field, applied or
// refused (fields.go), from which docs/machine-config.md's table is
// generated.
package machineconfig
