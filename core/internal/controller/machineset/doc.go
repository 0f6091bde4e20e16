// Package machineset is the MachineSet controller: it keeps spec.replicas
// machines of a set, the way the Kubernetes ReplicaSet controller keeps pods.
//
// A reconcile reads like a table of contents (machineset_controller.go): a
// set being deleted deletes its machines and then its finalizer (delete.go);
// any other gets the finalizer and is gathered into a scope (scope.go). A
// phase that settles the sync stops the ones after it. The phases:
//
//  1. validate (validate.go): a selector that is not empty and selects the
//     template; otherwise an InvalidSelector event, and stop. A template
//     duration that cannot be used (stored before the schema refused it):
//     an InvalidDuration event naming the field, and stop.
//  2. claimMachines (adoption.go): adopt orphans the selector matches,
//     release machines that no longer match.
//  3. syncTemplate (template_sync.go): the node template, the machine
//     configuration and the class kind onto the existing machines, in place.
//  4. holdWhileFrozen (freeze.go): while the API server freeze holds, report
//     the counts only, and stop.
//  5. autoPreserve (preserve.go): keep spec.autoPreserveFailedMachineMax
//     Failed machines preserved automatically (the preserve value
//     auto-preserved), the newest first, taking it from the oldest when
//     more carry it than allowed.
//  6. manageReplicas (replicas.go): plan creations and deletions (slow-start
//     batches, Failed replacement, scale-down order from victims.go) against
//     a fresh list, and carry them out.
//  7. computeStatus (status.go): the counts and the ReplicaFailure
//     condition.
//
// Then the status is written once, only when it changed, through
// setup.Patcher with the set's resourceVersion (status.go); a conflict is
// setup.RequeueOnConflict's: synced again soon, no error.
// docs/machinedeployments.md describes the behaviour for users.
package machineset
