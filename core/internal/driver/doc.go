// Package driver is the core's client of the machina Driver API: it dials a
// driver over its Unix socket, waits until the driver is ready, learns its
// name and capabilities, and then offers one method per MachineService RPC.
//
// Every call gets its own timeout (per kind of call, see Options), is logged
// with secrets stripped and measured in Prometheus metrics by
// go-grpc-middleware's interceptors (as the SDK does on the driver's side,
// plus MCM's metric names), and holds a per-machine lock so that at most one call per Machine is in flight, as the
// Driver API promises drivers. Optional RPCs the driver did not advertise
// are refused locally with UNIMPLEMENTED, without touching the network.
//
// A manager may run several drivers: Set, a Router, finds the driver of a
// MachineClass by the provider values each driver lists in GetPluginInfo,
// and answers a *NoDriverError when none (or more than one) does.
//
// The package decides nothing about retries: it reports gRPC codes (see Code
// and IsTransient) and leaves the decision to the controllers.
package driver
