package driver

import (
	"context"
	"path"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
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
		c.metrics.grpc.UnaryClientInterceptor(),
		c.recordMCM,
		logging.UnaryClientInterceptor(logging.LoggerFunc(c.logCall),
			logging.WithLogOnEvents(logging.PayloadSent, logging.PayloadReceived, logging.FinishCall),
			logging.WithLevels(codeLevel),
			logging.WithDurationField(logging.DurationToDurationField),
			// The method names the call; the rest is the same on every line.
			logging.WithDisableLoggingFields(logging.SystemTag[0], logging.ComponentFieldKey, logging.ServiceFieldKey, logging.MethodTypeFieldKey),
			logging.WithFieldsFromContextAndCallMeta(machineField)),
	}
}

// recordMCM measures an RPC in MCM's metrics, labelled by the driver's name.
func (c *Client) recordMCM(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	start := time.Now()
	err := invoker(ctx, method, req, reply, cc, opts...)
	c.metrics.observeMCM(path.Base(method), c.driverName(), Code(err), time.Since(start))
	return err
}
