package driver

import (
	"context"
	"path"
	"time"

	"google.golang.org/grpc"
)

// intercept is the client's unary interceptor: it measures and logs every
// RPC sent on the connection, identity RPCs included. It sits below the
// per-machine lock, so the recorded duration is the driver's, not the time
// a call waited for another call on the same machine.
func (c *Client) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	start := time.Now()
	err := invoker(ctx, method, req, reply, cc, opts...)
	d := time.Since(start)
	rpc := path.Base(method)
	c.metrics.observe(rpc, c.driverName(), Code(err), d)
	logCall(c.loggerFor(ctx), rpc, req, reply, err, d)
	return err
}
