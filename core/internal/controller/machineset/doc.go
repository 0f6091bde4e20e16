// Package machineset is the MachineSet controller: it keeps spec.replicas
// machines of a set, the way the Kubernetes ReplicaSet controller keeps pods.
//
// The reconcile (machineset_controller.go) claims the machines (adoption.go),
// applies the node template and machine configuration to them in place
// (template_sync.go), plans creations and deletions (replicas.go: slow-start
// batches, Failed replacement, scale-down order from victims.go) against a
// fresh list, and writes the status once, only when it changed (status.go).
// docs/machinedeployments.md describes the behaviour for users.
package machineset
