package sdk

import (
	"context"
	"fmt"
	"path"
	"runtime/debug"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// interceptors returns the server's unary interceptor chain, outermost
// first:
//
//  1. metrics, outermost so they count every call with its final code;
//  2. one log line per call (method, code, duration, request and response
//     with secrets stripped);
//  3. the response size check, INTERNAL for a response over the Driver
//     API's 16 MiB limit;
//  4. panic recovery, so a panicking driver answers INTERNAL and the
//     process keeps serving;
//  5. the capability gate, UNIMPLEMENTED for unadvertised optional RPCs;
//  6. request validation, INVALID_ARGUMENT before the driver is reached.
func (s *Server) interceptors() []grpc.UnaryServerInterceptor {
	return []grpc.UnaryServerInterceptor{
		s.metrics.UnaryServerInterceptor(),
		s.logCalls,
		limitResponseSize,
		recovery.UnaryServerInterceptor(recovery.WithRecoveryHandlerContext(s.recoverPanic)),
		s.capabilityGate,
		validateRequests,
	}
}

// limitResponseSize answers INTERNAL, naming the size, for a response the
// core would not accept. Sending it would fail in gRPC with
// RESOURCE_EXHAUSTED, which the core cannot tell from a provider out of
// capacity (and for CreateMachine waits 10 minutes before it retries).
func limitResponseSize(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if err != nil {
		return resp, err
	}
	if m, ok := resp.(proto.Message); ok {
		if size := proto.Size(m); size > maxResponseSize {
			return nil, Internal("the driver's %s response is %d bytes, larger than the Driver API limit of %d bytes",
				path.Base(info.FullMethod), size, maxResponseSize)
		}
	}
	return resp, nil
}

// recoverPanic turns a panic in the driver into INTERNAL. The panic value
// and stack go to the log only: they may describe driver internals the
// caller has no use for.
func (s *Server) recoverPanic(ctx context.Context, p any) error {
	method, _ := grpc.Method(ctx)
	s.opts.logger.ErrorContext(ctx, "driver panicked while handling a call",
		"grpc.method", method, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
	return Internal("internal error")
}
