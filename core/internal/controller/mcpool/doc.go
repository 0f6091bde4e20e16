// Package mcpool is the update controller of machine configuration pools
// (OpenShift's MachineConfigController node controller,
// docs/machine-config.md).
//
// The pool controller reconciles one MachineConfigPool at a time in named
// phases (core/internal/controller/phase), and writes the pool's status
// once at the end, only when it changed (setup.Patcher); a conflict is
// setup.RequeueOnConflict's: synced again soon, no error. The phases:
//
//  1. members (members.go): the pool's Nodes, chosen by spec.nodeSelector or
//     by the MachineSet or MachineDeployment the pool names; a Node several
//     pools choose goes to one by MCO's rule (master over any other, a
//     custom pool over worker), and a Node that two custom pools choose is
//     driven by neither and both pools say so;
//  2. rollout (rollout.go): unless the pool is paused or a node is degraded,
//     gives as many nodes desiredConfig=<spec.configuration.name> as
//     maxUnavailable allows (the budget of core/internal/inplace), zone by
//     zone, oldest first, passing over a node that asks not to be
//     disrupted; a Node born after its pool's configuration gets it at
//     once; a node degraded on a configuration the pool no longer targets
//     (the bad MachineConfig was fixed or reverted) is given the target, as
//     MCO does, within maxUnavailable;
//  3. status (status.go): the machine counts and the conditions Updated,
//     Updating, NodeDegraded and Degraded, and status.configuration once
//     every node runs the target.
//
// The node agent answers on the Node's annotations (state, currentConfig,
// reason) and asks for a drain with desiredDrain; the drain controller
// (core/internal/controller/mcdrain) cordons and drains, or uncordons a
// Node that is Ready, and acknowledges with lastAppliedDrain.
//
// A Node that a MachineDeployment's in-place rollout has marked
// (candidate-for-update or selected-for-update) is not given a new
// configuration until the marks are gone; the MachineDeployment does not
// select a Node whose pool update is under way (inplace.ConfigUpdating). One
// Node is never driven by both.
package mcpool
