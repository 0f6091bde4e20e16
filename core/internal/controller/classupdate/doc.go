// Package classupdate is the class update controller: when a MachineClass
// changes, it asks the driver to apply the new class to the running VMs of
// the class's machines through the Driver API's UpdateMachine (§6.7), a few
// machines at a time, instead of leaving them drifting from their class
// until they are replaced.
//
// Each Machine records which class contents its VM was created or last
// updated with: v1alpha1.ClassHashAnnotation, the hash of the class's
// provider, provider spec, node template and secret references (never
// secret values; driverclass.Contents). The contents themselves are kept by
// hash in snapshots, ControllerRevisions owned by the class, so that the
// driver can be told what the VM has (UpdateMachineRequest.old_machine_class).
//
// A reconcile of a class runs these phases:
//
//  1. snapshot (snapshot.go): keep a snapshot of the class's current
//     contents, and delete the snapshots no machine refers to any more;
//  2. stamp (stamp.go): record the current hash on machines that have a VM
//     but no record (machines created before this controller ran);
//  3. update (update.go): for the machines whose hash differs, start
//     UpdateMachine while the class has fewer than Options.MaxConcurrent
//     calls in flight; each call runs on its own (calls.go), so a slow one
//     holds one slot, not the class, and when it ends the class is
//     reconciled again to start the next. Each answer is recorded
//     (record.go) in the machine's ClassUpdated condition, its annotations
//     and an event. Applied: the machine takes the new hash. Needs a new VM:
//     the VM was left untouched, the machine keeps its old hash and waits
//     for the normal rollout path to replace it; it is not asked again for
//     the same contents. An error: retried after the period its code calls
//     for (retry.go).
//
// Each machine is written through setup.Patcher, only what changed: its
// annotations with a merge patch, its status with the machine's
// resourceVersion (the Machine controller writes the same conditions). A
// conflict of the reconcile's own writes (stamp) is setup.RequeueOnConflict's:
// reconciled again soon, no error; a conflict while an answer is recorded
// is written again on a fresh read of the machine (record.go), so the
// driver is not asked twice for one answer; only when the retries run out,
// or the machine has another VM by then, is it asked again soon
// (UpdateMachine is idempotent).
//
// A driver without the UpdateMachine capability is never called: its
// machines behave as before this controller existed. Nothing runs while the
// API server freeze gate is closed.
package classupdate
