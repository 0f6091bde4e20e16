// Package mcdrain is the drain controller of the MachineConfig handshake
// (the drain half of OpenShift's MachineConfigController node controller,
// docs/machine-config.md): the node agent asks for a drain or an uncordon
// on its Node, this controller does it and acknowledges.
//
// A reconcile (controller.go) reads one Node's desiredDrain annotation. A
// request already acknowledged (lastAppliedDrain) is done. A request that
// no rollout asked for (request.go: the Node has no desiredConfig, or the
// request names another configuration) is left unanswered, with an event
// on the Node that says why. drain-<config> cordons the Node and runs one
// non-blocking pass of the drain a machine deletion uses (core/internal/drain),
// following the MachineDrainRules that select the Node's Machine
// (rules.go), until the Node is drained; uncordon-<config> waits until the
// Node is Ready and uncordons it. Either is then acknowledged with
// lastAppliedDrain=<the request>, in one patch with the uncordon. A drain
// that waits for pods to complete says so once per set of pods (waits.go).
//
// The pool controller (mcpool) gives Nodes their desiredConfig; the two
// never call each other and meet only on the Node's annotations.
package mcdrain
