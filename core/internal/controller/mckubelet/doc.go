// Package mckubelet is the KubeletConfig controller of machine
// configuration pools (OpenShift's MachineConfigController kubelet-config
// controller, docs/machine-config.md).
//
// A reconcile (controller.go): a KubeletConfig being deleted deletes the
// MachineConfigs it owns and then its finalizer (mcfg.Release); any other
// gets the finalizer and is gathered into a scope (controller.go). A phase
// that finds the KubeletConfig cannot be applied records why and stops the
// ones after it; the MachineConfigs written before stay. The phases:
//
//  1. validate (validate.go): spec.kubeletConfig decodes strictly into the
//     kubelet's KubeletConfiguration type (no unknown, duplicate or wrongly
//     typed field) and sets none of the fields MCO refuses (cgroupDriver,
//     clusterDNS, clusterDomain, failSwapOn, featureGates,
//     memorySwap.swapBehavior, staticPodPath); autoSizingReserved excludes
//     systemReserved; tlsSecurityProfile is Old, Intermediate, Modern or a
//     valid Custom (tls.go).
//  2. selectPools (controller.go): the pools the selector selects; an empty
//     selector, or one that selects nothing, is a failure.
//  3. claimSuffix (suffix.go): the first KubeletConfig of a pool writes
//     99-<pool>-generated-kubelet, the next ones of that pool -1 to -9,
//     recorded once in the mc-name-suffix annotation so that names never
//     move.
//  4. writeConfigs (machineconfig.go): for every selected pool, kubeletConfig
//     and the TLS profile merged over the pool's base kubelet configuration
//     (kubeletconf.go: the /etc/kubernetes/kubelet.conf of the pool's base
//     MachineConfigs; a pool without one is a failure), written as a
//     MachineConfig the KubeletConfig owns, with the log level's drop-in and
//     the node-sizing file (sizing.go); the MachineConfigs of pools it no
//     longer selects are deleted. The render controller takes it from there.
//
// Then the status (Success or Failure, with the reason) is written once,
// only when it changed, with an event, through setup.Patcher with the
// KubeletConfig's resourceVersion, as are the suffix annotation and the
// generated MachineConfigs; a conflict (another KubeletConfig took the
// suffix first, say) is setup.RequeueOnConflict's: synced again soon, no
// error.
package mckubelet
