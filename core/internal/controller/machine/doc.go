// Package machine is the Machine controller: it creates the VM of a Machine
// through the driver, waits for its Node to join and watches its health,
// keeps the Node's labels, annotations and taints in line with the
// Machine's node template, and on deletion drains the Node, deletes the VM
// and the Node, and releases the Machine.
//
// A reconcile reads like a table of contents (machine_controller.go): it
// gathers what it read into a scope, runs small phase functions over it,
// and writes the Machine once at the end, only if something changed
// (machine_status.go), through setup.Patcher: metadata and spec locked,
// status not; a conflict is setup.RequeueOnConflict's (reconciled again
// soon, no error). Its Node writes go through setup.Patcher too. A Machine
// that is not being deleted gets the finalizer, then goes through these
// phases:
//
//  1. create (machine_create.go): look the VM up through the driver, create
//     it with the Node's bootstrap if there is none, initialize it if the
//     driver asks, and move the machine to Pending;
//  2. nodeTemplate (machine_nodetemplate.go): the template's labels,
//     annotations and taints onto the Node, by a three-way merge that leaves
//     what others put there alone;
//  3. virtualCapacity (machine_virtualcapacity.go): the class's
//     nodeTemplate.virtualCapacity into the Node's capacity and allocatable;
//  4. inPlace (machine_inplace.go): the machine's side of an in-place
//     update, the rollout's labels on the Node turned into the InPlaceUpdate
//     condition and the machine's phase;
//  5. health (machine_health.go): Pending to Running once the Node is
//     healthy; Unknown, then Failed after the creation or health timeout,
//     when it is not;
//  6. preservation (machine_preserve.go): start, keep and stop the
//     machine's preservation (the preserve annotation of the Node or the
//     Machine; which value is in force, the Preserved condition and the
//     preserved taint are core/internal/preservation's);
//  7. vmCheck (machine_vmcheck.go): without a target cluster, ask the driver
//     from time to time whether an Available machine's VM is still there.
//
// A Machine being deleted goes through the deletion flow (machine_delete.go,
// Driver API §11.6) from the step stored in status.deletionStep; a step that
// finishes hands over to the next in the same reconcile, and each is safe
// to repeat. The deletion steps:
//
//  1. terminating: the phase Terminating, the Node marked as terminating;
//  2. getVMStatus: the Node's name, from a Node labelled with the machine's
//     name or from the driver, when the machine has none yet;
//  3. preDrainHook: wait for the pre-drain hooks to be removed;
//  4. drain: drain the Node, one pass per reconcile, forced after the drain
//     timeout, on an unreachable Node or with force-deletion=True;
//  5. deleteVolumeAttachments: after a forced drain, delete the Node's
//     VolumeAttachments and wait until they are gone;
//  6. preTerminateHook: wait for the pre-terminate hooks to be removed;
//  7. deleteVM: DeleteMachine through the driver;
//  8. deleteNode: the Node and the machine's bootstrap token;
//  9. removeFinalizer: release the Machine.
//
// What a driver error code leads to is a table (retry.go), as the Driver API
// specification (docs/driver-api.md) and docs/machine-lifecycle.md describe
// it.
//
// What is not the reconcile lives in packages of one purpose each: the
// meaning of preservation (core/internal/preservation), the metrics under
// MCM's names (core/internal/mcmmetrics), and reading an object live while
// the cache does not show the controller's own write (setup.ReadFresh).
package machine
