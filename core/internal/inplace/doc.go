// Package inplace is the engine of in-place updates: the parts of a
// rollout that do not depend on what drives it. A MachineDeployment with
// the InPlaceUpdate strategy uses it today; the machine configuration
// pools reuse it instead of a copy.
//
// It holds pure decisions and small object edits, no controller:
//
//   - budget.go: how many nodes an Auto step may select (the arithmetic
//     of MCM's in-place rollout) and which ones, and how large the new
//     MachineSet grows;
//   - condition.go: the InPlaceUpdate node condition, whose reason follows
//     the node's labels (candidate-for-update, selected-for-update,
//     update-result);
//   - timeout.go: the in-place update timeout of a machine;
//   - node.go: the labels, annotations and taint a rollout puts on a Node
//     and takes off it, written with minimal patches;
//   - counts.go: the counters of a rollout's status.
//
// docs/in-place-updates.md describes the wire protocol these implement.
package inplace
