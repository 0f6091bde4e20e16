// Command machina-node-agent is machina's reference node agent for in-place
// updates. It runs on every node (a DaemonSet, deploy/node-agent), watches
// its own Node only, and speaks MCM's in-place update protocol with
// machina's target identity (docs/in-place-updates.md):
//
//   - when the Node's InPlaceUpdate condition has reason ReadyForUpdate and
//     the annotation inplace.machina.io/desired differs from
//     inplace.machina.io/current, it copies <source-dir>/<desired>/ into
//     --root (each file written to a temporary name and renamed, modes
//     kept) and runs --apply-command, if any;
//   - it reports the result on its Node's metadata: the label
//     node.machine.sapcloud.io/update-result=successful with
//     inplace.machina.io/current=<desired> (and the failure reason
//     annotation removed), or update-result=failed with
//     node.machine.sapcloud.io/update-failed-reason.
//
// Crash safety: before it applies, the agent writes an "attempting <target>,
// attempt n, started at t" marker to --state-dir, and after applying it
// records the target as last applied. A restart that finds the marker of
// the Node's current target applies it again (copying is idempotent), up
// to --max-attempts interrupted attempts, after which it reports failed. A
// restart that finds the target already applied (applied, then stopped
// before reporting) reports success without applying again.
//
// Beside it, internal/machineconfig speaks the MachineConfig handshake of
// machine configuration pools (docs/machine-config.md): it applies a
// rendered MachineConfig's files, units, SSH keys and kernel arguments
// under --root, activates them with the least action (systemctl, a
// reboot), and restores what it overwrote when a configuration no longer
// has it.
//
// The agent writes labels and annotations of its own Node, never its
// status. SIGTERM or SIGINT stops it gracefully; an apply in progress is
// stopped and resumed by the next start. Exit codes: 0 after a graceful
// stop, 1 when it cannot start or fails, 2 for bad flags.
package main
