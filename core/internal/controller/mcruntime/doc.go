// Package mcruntime is the ContainerRuntimeConfig controller of machine
// configuration pools (MCO's container-runtime-config controller,
// docs/machine-config.md "ContainerRuntimeConfig").
//
// For each ContainerRuntimeConfig it:
//
//   - validates it (validate.go) with MCO's rules: pidsLimit -1, 0 or at
//     least 20, logLevel one of CRI-O's, logSizeMax negative or at least
//     8k, overlaySize not negative, defaultRuntime crun or runc, and a pool
//     selector that selects something;
//   - gives it a name suffix per pool (mcfg.ChooseSuffix), recorded in its
//     mc-name-suffix annotation: 99-<pool>-generated-containerruntime, then
//     -1 to -9;
//   - writes, for every pool it selects, the MachineConfig carrying one
//     CRI-O drop-in per field under /etc/crio/crio.conf.d/ (dropins.go, the
//     paths MCO uses), owned by it; the render controller merges it and the
//     pool controller rolls it out like any other;
//   - deletes the MachineConfigs of pools it no longer selects, and all of
//     them when it is deleted (a finalizer holds it until then);
//   - reports Success or Failure in its status, with the reason.
//
// The suffix annotation and the status are written through setup.Patcher
// with the object's resourceVersion, only when they changed; a conflict
// (another ContainerRuntimeConfig took the suffix first, say) is
// setup.RequeueOnConflict's: synced again soon, no error.
package mcruntime
