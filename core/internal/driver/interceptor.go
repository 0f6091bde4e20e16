package driver

import (
	"context"
	"path"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/selector"
	"google.golang.org/grpc"
)

// interceptors returns the client's unary interceptor chain, outermost
// first, the SDK's on the driver's side of the socket mirrored:
//
//  1. go-grpc-middleware's gRPC client metrics;
//  2. MCM's metrics, for MachineService RPCs;
//  3. go-grpc-middleware's logging: the request, the response and one
//     line per finished call, with secrets stripped (see logCall).
//
// Every RPC sent on the connection passes them, identity RPCs included. They
// sit below the per-machine lock, so a recorded duration is the driver's,
// not the time a call waited for another call on the same machine.
func (c *Client) interceptors() []grpc.UnaryClientInterceptor {
	return []grpc.UnaryClientInterceptor{
		c.recordGRPC,
		c.recordMCM,
		// The interceptor builds its fields for every call; skip it when
		// the call's logger would write none of its lines (the default
		// --v=0), which saves about a hundred allocations a call.
		selector.UnaryClientInterceptor(
			logging.UnaryClientInterceptor(logging.LoggerFunc(c.logCall),
				logging.WithLogOnEvents(logging.PayloadSent, logging.PayloadReceived, logging.FinishCall),
				logging.WithLevels(codeLevel),
				logging.WithDurationField(logging.DurationToDurationField),
				// The method names the call; the rest is the same on every line.
				logging.WithDisableLoggingFields(logging.SystemTag[0], logging.ComponentFieldKey, logging.ServiceFieldKey, logging.MethodTypeFieldKey),
				logging.WithFieldsFromContextAndCallMeta(machineField)),
			selector.MatchFunc(c.logsCalls)),
	}
}

// logsCalls tells whether the call's logger writes any line of the call
// log: logFailureLevel is the lowest verbosity callVerbosity gives.
func (c *Client) logsCalls(ctx context.Context, _ interceptors.CallMeta) bool {
	return c.loggerFor(ctx).V(logFailureLevel).Enabled()
}

// recordGRPC measures an RPC in go-grpc-middleware's client metrics of
// the driver's current collectors.
func (c *Client) recordGRPC(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	return c.metrics.Load().unary(ctx, method, req, reply, cc, invoker, opts...)
}

// recordMCM measures an RPC in MCM's metrics, labelled by the driver's name.
func (c *Client) recordMCM(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	start := time.Now()
	err := invoker(ctx, method, req, reply, cc, opts...)
	c.metrics.Load().observeMCM(path.Base(method), c.driverName(), Code(err), time.Since(start))
	return err
}
