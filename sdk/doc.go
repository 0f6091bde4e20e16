// Package sdk is the Go SDK for writing a machina driver: the process that
// manages one provider's virtual machines for the machina core, which
// reaches it over the gRPC Driver API (package machina.driver.v1alpha1) on
// a Unix socket.
//
// A driver implements Driver (CreateMachine, DeleteMachine,
// GetMachineStatus) and, optionally, Initializer, Lister, VolumeMapper and Updater;
// implementing one of these advertises its capability. Prober reports
// readiness. The SDK does the rest:
//
//   - IdentityService from Info and the implemented interfaces;
//   - UNIMPLEMENTED for optional RPCs that are not advertised (see also
//     WithoutCapability);
//   - INVALID_ARGUMENT, naming the field, for requests that break the
//     Driver API's rules (required fields, names, size limits), before the
//     driver sees them;
//   - INTERNAL for a driver method that panics, while the process keeps
//     serving, and for a response over the API's 16 MiB limit (which gRPC
//     would otherwise fail with a misleading RESOURCE_EXHAUSTED);
//   - one log line per call with log/slog (method, code, duration, the
//     Machine), at debug level with the request and response stripped of
//     secret fields (package proto/sanitize);
//   - go-grpc-middleware's Prometheus server metrics:
//     grpc_server_handled_total{grpc_method,grpc_code} and the histogram
//     grpc_server_handling_seconds{grpc_method}, among others;
//   - the Unix socket: stale socket removal, owner-only permissions,
//     graceful stop on SIGTERM.
//
// A driver's main is typically:
//
//	func main() {
//		sdk.Main(sdk.Info{Name: "example.driver.machina.io", Version: "v0.1.0"}, newDriver())
//	}
//
// and the driver returns gRPC status errors with the codes the Driver API
// specification (docs/driver-api.md) gives for each RPC, e.g.
// sdk.NotFound("no VM for machine %q", name). Error messages must never
// contain secret values.
//
// For more control (own flags, own signal handling, serving in tests) use
// NewServer and Server.Serve.
package sdk
