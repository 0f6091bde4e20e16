// Package mcrender is the render controller of machine configuration pools
// (OpenShift's MachineConfigController render controller,
// docs/machine-config.md).
//
// The render controller reconciles one MachineConfigPool at a time in
// named phases (core/internal/controller/phase). The phases:
//
//  1. selectFragments (select.go): the MachineConfigs the pool's
//     machineConfigSelector selects, rendered ones left out, in merge order
//     (mcfg.SortFragments: the worker role's first, then by name);
//  2. render (select.go, merge.go, ignition_merge.go): one MachineConfig
//     spec from them, named rendered-<pool>-<hash of the spec> (hash.go);
//     an extension outside SupportedExtensions (extensions.go), or
//     kernel-devel with another kernel than the default, is refused;
//  3. refuse (refuse.go): what MCO refuses for the pool's nodes: a FIPS
//     change against the pool's target (day 2), the 64k-pages kernel on a
//     node that is not arm64;
//  4. writeRendered (write.go): the rendered MachineConfig, owned by the
//     pool, created once: its name is its content;
//  5. pointPool (write.go): the pool's spec.configuration, the update
//     controller's target, with the fragments as its source list.
//
// Then the RenderDegraded condition is written (status.go). The pool's
// spec and status are written through one setup.Patcher, each part only
// when it changed and with the resourceVersion it changes; a conflict is
// setup.RequeueOnConflict's: rendered again soon, no error. A fragment
// that cannot be rendered stops the phases: the pool keeps its last good
// target and RenderDegraded names the fragment and what is wrong with it.
//
// The collector (core/internal/controller/mcgc) deletes a rendered
// MachineConfig that no pool (spec or status) and no Node (currentConfig,
// desiredConfig) has referred to for a grace period; MCO keeps them
// forever.
package mcrender
