package sdk

import (
	"context"
	"fmt"
	"log/slog"
	"path"
	"runtime/debug"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/selector"
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
	"github.com/machina-io/machina/proto/sanitize"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// Log field keys of the request and response; the logging interceptor
// reports them with its "finished call" line.
const (
	requestField  = "grpc.request.content"
	responseField = "grpc.response.content"
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
	logger := slogAdapter(s.opts.logger)
	// The service and method are compared apart: CallMeta.FullMethod
	// formats a new string on every call.
	isProbe := selector.MatchFunc(func(_ context.Context, c interceptors.CallMeta) bool {
		return c.Method == "Probe" && c.Service == driverv1alpha1.IdentityService_ServiceDesc.ServiceName
	})
	notProbe := selector.MatchFunc(func(ctx context.Context, c interceptors.CallMeta) bool {
		return !isProbe.Match(ctx, c)
	})
	return []grpc.UnaryServerInterceptor{
		s.metrics.UnaryServerInterceptor(),
		selector.UnaryServerInterceptor(
			logging.UnaryServerInterceptor(logger, logging.WithLogOnEvents(logging.FinishCall)),
			notProbe),
		// The core probes the driver often; successful probes are logged
		// at debug level only.
		selector.UnaryServerInterceptor(
			logging.UnaryServerInterceptor(logger, logging.WithLogOnEvents(logging.FinishCall), logging.WithLevels(probeLevel)),
			isProbe),
		logPayloads,
		limitResponseSize,
		recovery.UnaryServerInterceptor(recovery.WithRecoveryHandlerContext(s.recoverPanic)),
		s.capabilityGate,
		validateRequests,
	}
}

func probeLevel(c codes.Code) logging.Level {
	if c == codes.OK {
		return logging.LevelDebug
	}
	return logging.DefaultServerCodeToLevel(c)
}

// logPayloads adds the request and the response to the fields of the
// call's log line. They are stored as messages and stripped of secrets when
// the line is written (see slogAdapter), so nothing is marshalled for a
// line that is not logged.
//
// Both are added at once, after the handler: each AddFields grows the
// call's field list, and the line is written only after the handler
// returned (panics are recovered below this interceptor).
func logPayloads(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if err == nil {
		logging.AddFields(ctx, logging.Fields{requestField, req, responseField, resp})
	} else {
		logging.AddFields(ctx, logging.Fields{requestField, req})
	}
	return resp, err
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

// slogAdapter makes an slog.Logger the logger of the go-grpc-middleware
// logging interceptor. Every proto message among the fields is rendered
// with sanitize.String, so no secret field reaches a log line whatever the
// interceptor puts into it.
func slogAdapter(l *slog.Logger) logging.Logger {
	return logging.LoggerFunc(func(ctx context.Context, lvl logging.Level, msg string, fields ...any) {
		level := slog.Level(lvl)
		if !l.Enabled(ctx, level) {
			return
		}
		attrs := make([]slog.Attr, 0, len(fields)/2)
		it := logging.Fields(fields).Iterator()
		for it.Next() {
			k, v := it.At()
			if m, ok := v.(proto.Message); ok {
				v = sanitize.String(m)
			}
			attrs = append(attrs, slog.Any(k, v))
		}
		l.LogAttrs(ctx, level, msg, attrs...)
	})
}
