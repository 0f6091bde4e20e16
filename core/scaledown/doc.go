// Package scaledown is the order in which a MachineSet deletes its machines
// when it has more than it wants. The MachineSet controller deletes the first
// machines of this order; kubectl-machina's "scale-down --dry-run" shows the
// same order and, for each machine, the key that placed it before the
// machines that stay. Keeping the order in one exported package makes the
// dry run answer what the controller will do, not what it did once.
package scaledown
