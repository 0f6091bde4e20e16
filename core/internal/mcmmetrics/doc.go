// Package mcmmetrics holds the Machine controller's metrics under
// machine-controller-manager's names: the duration gauges of a machine's
// creation, initialization, join, drain and deletion, and the counter of
// machines that failed to join (MCM's
// pkg/util/provider/metrics/metrics.go).
//
// Dashboards and alerts written for MCM query these series by name and by
// the labels namespace, machine_deployment, instance_type and zone, and
// read each gauge as the value of the last machine seen for its labels, in
// whole seconds. A cluster moved from MCM to machina keeps those panels
// only if the names, labels, help strings and that meaning stay exactly
// MCM's, so they are kept here, apart from machina's own histograms
// (machina_machine_join_duration_seconds, ..._drain_duration_seconds in the
// Machine controller), which keep the distribution MCM's gauges lose.
//
// The package knows the API types and nothing of a reconcile: the Machine
// controller gives it a machine and its class (Labels), and the duration.
// MCM's other names are served where their state lives: the freeze gauge
// by the API-server checker, the per-machine and per-deployment state by
// the manager and the MachineSet controller, the cloud API calls by the
// driver client.
package mcmmetrics
