// Package inmemory is a machina driver whose VMs live in the memory of the
// driver process. It needs no cloud and no Kubernetes, and it exists to
// exercise the core and the conformance suite: every optional capability can
// be switched off, and faults (error codes, latency, crashes) can be injected
// per RPC.
//
// # VMs
//
// A VM is created by CreateMachine and stored under Machine.name: one name,
// one VM, which belongs to the Machine of its namespace and name (the key of
// the Driver API, §6.1.3). Its provider ID is
// "inmemory:///<namespace>/<name>/<incarnation>", where the incarnation is
// random per VM, so a VM deleted and created again under the same name gets
// a new provider ID. The Node name of a VM is the machine name. A repeated
// CreateMachine with the same namespace and provider spec (compared as JSON,
// so key order and spacing do not matter) answers OK with the same provider
// ID, whatever the class name; another provider spec, or the name used by a
// Machine of another namespace, answers ALREADY_EXISTS. GetMachineStatus and
// DeleteMachine never see a VM for a Machine of another namespace. Secrets,
// user data, the machine's UID, labels and annotations are never compared.
// ListMachines lists the VMs of one class, by class namespace and name.
// With Options.RequireInitialization, a new VM reports needs_initialization
// until InitializeMachine has run for it.
//
// # Provider spec
//
// The provider spec must be a JSON object. Two keys are understood, all others
// are accepted and ignored:
//
//	{"capacity": {"cpu": "2", "memory": "4Gi"}, "bootDelay": "30s"}
//
// capacity maps resource names to quantities (strings) and is recorded on the
// VM; bootDelay must be a Go duration and is recorded on the VM too (the
// in-memory VM has nothing to boot, so it does not delay any answer).
//
// # Volumes
//
// GetVolumeIDs recognises two kinds of PersistentVolume as disks of this
// provider:
//
//   - a CSI volume whose driver is Options.CSIDriverName (default
//     "inmemory.csi.machina.io"): the volume ID is its volume handle;
//   - an in-tree hostPath volume whose path is under "/inmemory/": the volume
//     ID is the path.
//
// The CSI driver and handle are taken from the request's csi_driver and
// csi_volume_handle fields, or from spec.csi when those are empty. Every
// other volume is left out of the answer. A volume without a spec is an
// INVALID_ARGUMENT, as the Driver API requires one.
//
// # Faults
//
// Fault describes an injected failure of one RPC; see Driver.SetFault and
// ParseFaults for the text syntax used by the flag --fault and the
// environment variable MACHINA_INMEMORY_FAULTS. Options.CrashAfter makes the
// process exit with code 3 when a MachineService call arrives after the
// given number of calls was served, to test how the core copes with a driver
// restart; Options.StateFile keeps the VMs across such restarts.
package inmemory
