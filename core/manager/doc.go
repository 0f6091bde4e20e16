// Package manager builds and runs the whole machina manager from Options:
// the control and target clusters, the driver client, every controller,
// leader election, and the metrics and health servers. The
// machina-manager binary is a thin main around it (flags, signals, logging),
// and tests run exactly what the binary runs.
//
// A Manager is made in two steps. New checks the options, loads the
// cluster configurations and builds the controller-runtime manager; it
// fails fast on a bad flag or kubeconfig and talks to nobody. Run connects
// to the driver (waiting for it as long as the context allows), registers
// the controllers, and runs them until the context ends.
//
// docs/operating.md documents every flag, endpoint and metric.
package manager
