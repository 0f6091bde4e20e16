// Package mcgc is the collector of rendered MachineConfigs no longer used
// (docs/machine-config.md). MCO keeps them forever; a cluster that changes
// its configuration often piles them up.
//
// A reconcile looks at one rendered MachineConfig (one that a pool
// controls, mcfg.IsRendered; the render controller, mcrender, writes them)
// and asks whether a pool (spec or status configuration) or a Node
// (currentConfig or desiredConfig annotation) refers to it
// (references.go). One nobody refers to is marked with the
// unreferenced-since annotation, one referred to again is unmarked, and
// one marked for longer than the grace (--machine-config-gc-grace) is
// deleted, after a last look at the API server rather than the cache
// (controller.go).
package mcgc
