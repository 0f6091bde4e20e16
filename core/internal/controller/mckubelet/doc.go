// Package mckubelet is the KubeletConfig controller of machine
// configuration pools (OpenShift's MachineConfigController kubelet-config
// controller, docs/machine-config.md).
//
// For each KubeletConfig it:
//
//   - validates it (validate.go, tls.go): spec.kubeletConfig decodes
//     strictly into the kubelet's KubeletConfiguration type (no unknown,
//     duplicate or wrongly typed field) and sets none of the fields MCO
//     refuses (cgroupDriver, clusterDNS, clusterDomain, failSwapOn,
//     featureGates, memorySwap.swapBehavior, staticPodPath);
//     autoSizingReserved excludes systemReserved; tlsSecurityProfile is
//     Old, Intermediate, Modern or a valid Custom; the pool selector selects
//     something;
//   - gives it a name suffix (suffix.go): the first KubeletConfig of a pool
//     writes 99-<pool>-generated-kubelet, the next ones of that pool -1 to
//     -9, recorded in the KubeletConfig's mc-name-suffix annotation so that
//     names never move;
//   - for every pool it selects, merges kubeletConfig and the TLS profile
//     over the pool's base kubelet configuration (kubeletconf.go: the
//     /etc/kubernetes/kubelet.conf of the pool's base MachineConfigs, the
//     template controller's 01-<pool>-kubelet; a pool without one is a
//     failure) and writes the MachineConfig (machineconfig.go) carrying the
//     file, the log level's drop-in and the node-sizing file (sizing.go),
//     owned by the KubeletConfig; the render controller takes it from there;
//   - deletes the MachineConfigs of pools it no longer selects, and all of
//     them when it is deleted (a finalizer holds it until then), so the
//     pools render their base kubelet.conf again;
//   - reports Success or Failure in its status, with the reason.
package mckubelet
