// Package apiserver freezes the controllers while the control or target
// API server is unreachable (MCM's "API server freeze",
// reconcileClusterMachineSafetyAPIServer in gardener/machine-controller-manager
// pkg/util/provider/machinecontroller/machine_safety.go), so that an outage
// of the API server is not mistaken for an outage of the machines.
//
// When the target cluster's API server is down, kubelets cannot report and
// every Node turns NotReady; a Machine controller that went on would move
// every machine to Unknown and, after the health timeout, replace all of
// them. The Checker probes each API server every
// --machine-safety-apiserver-statuscheck-period (GET /readyz); once one has
// been unreachable for longer than
// --machine-safety-apiserver-statuscheck-timeout it freezes the shared
// freeze.Gate and sets the metric mcm_machine_controller_frozen to 1. While
// an API server is unreachable it probes every timeout/5.
//
// When all API servers answer again, the Checker resets the health timeout
// of every Unknown machine (status.unhealthySince set to now, lastOperation
// "Machine health timeout was reset because the API server was
// unreachable"), waits until the manager's cache shows the resets (so that
// the Machine controller cannot act on the old timestamps) and until every
// informer cache has caught up with its API server (CatchUp), and only then
// opens the gate, with a grace period as long as the outage during which
// timeouts fail no machine (freeze.Gate.UnfreezeWithGrace). The gate may
// also have been frozen by the manager's leader election, when it lost its
// lease to the outage; the Checker of the next term unfreezes it the same
// way.
package apiserver
