// Package mckubelet is the KubeletConfig controller of machine
// configuration pools (OpenShift's MachineConfigController kubelet-config
// controller, docs/machine-config.md).
//
// For each KubeletConfig it:
//
//   - validates it (validate.go): a pool selector that selects something,
//     a kubeletConfig that is a JSON object without the fields the
//     controller refuses to let users set (cgroupDriver, clusterDNS,
//     clusterDomain, featureGates, failSwapOn, swapBehavior);
//   - gives it a name suffix (suffix.go): the first KubeletConfig of a pool
//     writes 99-<pool>-generated-kubelet, the next ones -1 to -9, recorded in
//     the KubeletConfig's mc-name-suffix annotation so that names never move;
//   - for every pool it selects, merges kubeletConfig over the pool's
//     kubelet configuration (kubeletconf.go: the /etc/kubernetes/kubelet.conf
//     of the pool's other MachineConfigs, or a minimal default) and writes
//     the MachineConfig (machineconfig.go) carrying the file, owned by the
//     KubeletConfig; the render controller takes it from there;
//   - deletes the MachineConfigs of pools it no longer selects, and all of
//     them when it is deleted (a finalizer holds it until then);
//   - reports Success or Failure in its status, with the reason.
package mckubelet
