// Package orphan collects orphan VMs: VMs a driver lists for a MachineClass
// whose Machine is gone, or whose Machine records another VM (Driver API
// §11.7, docs/safety.md).
//
// A collector that deletes VMs is the most dangerous code in the manager:
// MCM deleted every VM of a cluster as "orphans" after a restart while its
// API server was unavailable (MCM issue #657). This collector therefore
// deletes a VM only when all of these hold:
//
//   - the manager's caches of Machines and MachineClasses have synced;
//   - the control API server answered at the start of the scan (any read
//     error aborts the scan, deletes nothing and forgets all candidates);
//   - the driver listed the VM as a candidate in two consecutive
//     successful scans of its class;
//   - a fresh read of the Machine from the API server (not the cache)
//     still makes it an orphan: NotFound from the API server, or a Machine
//     whose spec.providerID is set and differs.
//
// VMs of Machines still being created (empty spec.providerID, phase "" or
// CrashLoopBackOff) are never candidates.
package orphan
