// Package healthcheck is the MachineHealthCheck controller (machina.io/v1alpha1,
// Cluster API's MachineHealthCheck): for each check it reads the Machines
// its selector picks and their Nodes (both from caches), decides which are
// unhealthy, and deletes those, so that their MachineSet replaces them,
// unless more are unhealthy than the check's maxUnhealthy or unhealthyRange
// allow (the short-circuit that keeps a network partition from replacing a
// whole fleet). With a remediationTemplate it deletes nothing: it creates a
// remediation request per unhealthy machine, from the template, for an
// external controller, and deletes the request once the machine is healthy
// again (external.go).
//
// A machine is unhealthy when
//   - its Node has one of the check's unhealthy conditions (type and
//     status) for longer than the condition's timeout, counted from the
//     condition's lastTransitionTime;
//   - it has had no Node for nodeStartupTimeout since its creation, or its
//     Node is gone after the machine ran;
//   - it carries the remediate-machine annotation.
//
// A reconcile of a check (reconcile.go) writes the check's status once,
// after these phases:
//
//  1. judge: the selected machines and their Nodes, from the caches, each
//     judged healthy or not; the earliest pending timeout is the next
//     requeue. A selector or remediation template the check cannot use
//     stops the phases;
//  2. decide: the short-circuit (every selected machine that is not
//     healthy counts against maxUnhealthy or unhealthyRange) and the API
//     server freeze gate each stop the phases, as does a limit the check
//     cannot read;
//  3. remediate: delete the unhealthy machines a MachineSet controls, or,
//     with a remediation template, ask for their external remediation.
//
// The status is written through setup.Patcher, only when it changed; a
// conflict is setup.RequeueOnConflict's: checked again soon, no error.
//
// Timeouts are not polled: a check is reconciled again when the earliest
// pending timeout expires, and whenever a selected Machine or its Node's
// conditions change.
//
// The MCM health timeout of the Machine controller keeps applying to every
// machine; a check can only act sooner (docs/disruption.md).
package healthcheck
