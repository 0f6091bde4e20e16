package sdk

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
	"github.com/machina-io/machina/proto/sanitize"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// Log field keys of the request and response in a call's line, and of the
// Machine a call is about (the core's key).
const (
	requestField  = "grpc.request.content"
	responseField = "grpc.response.content"
	machineField  = "machine"
)

// machineRequest is a request about one Machine.
type machineRequest interface {
	GetMachine() *driverv1alpha1.Machine
}

// machineOf is the Machine a request is about, or nil.
func machineOf(req any) *driverv1alpha1.Machine {
	if r, ok := req.(machineRequest); ok {
		return r.GetMachine()
	}
	return nil
}

// logCalls writes one line per finished call, "finished call", with the
// fields go-grpc-middleware's logging interceptor gives it (which the SDK
// used before, so the line reads the same): protocol, grpc.component,
// grpc.service, grpc.method, grpc.method_type, peer.address,
// grpc.start_time, grpc.request.deadline, machine (namespace/name, for a
// call about one Machine), grpc.code, grpc.error and grpc.time_ms; when the
// logger is at debug level also the request and (on success) the response,
// stripped of secrets by sanitize.String. Successful probes are debug
// lines, other calls have the level go-grpc-middleware gives their code.
//
// It is the middleware's line written directly: the middleware builds and
// merges its field lists on every call, about fifty allocations, before it
// asks the logger whether the line is wanted. Here the level is checked
// first, and a dropped line (a successful Probe at the default level)
// costs nothing.
func (s *Server) logCalls(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	start := time.Now()
	resp, err := handler(ctx, req)
	code := status.Code(err)
	service, method := splitMethod(info.FullMethod)
	level := slog.Level(logging.DefaultServerCodeToLevel(code))
	if method == "Probe" && service == driverv1alpha1.IdentityService_ServiceDesc.ServiceName {
		level = slog.Level(probeLevel(code))
	}
	l := s.opts.logger
	if !l.Enabled(ctx, level) {
		return resp, err
	}
	attrs := make([]slog.Attr, 0, 14)
	attrs = append(attrs,
		slog.String(logging.SystemTag[0], logging.SystemTag[1]),
		slog.String(logging.ComponentFieldKey, logging.KindServerFieldValue),
		slog.String(logging.ServiceFieldKey, service),
		slog.String(logging.MethodFieldKey, method),
		slog.String(logging.MethodTypeFieldKey, string(interceptors.Unary)))
	if p, ok := peer.FromContext(ctx); ok {
		attrs = append(attrs, slog.String("peer.address", p.Addr.String()))
	}
	attrs = append(attrs, slog.String("grpc.start_time", start.Format(time.RFC3339)))
	if d, ok := ctx.Deadline(); ok {
		attrs = append(attrs, slog.String("grpc.request.deadline", d.Format(time.RFC3339)))
	}
	if m := machineOf(req); m != nil {
		attrs = append(attrs, slog.String(machineField, m.GetNamespace()+"/"+m.GetName()))
	}
	// The payloads are for debugging, as in the core (--v=4) and the CSI
	// sidecars: rendering them is most of what a line costs.
	if l.Enabled(ctx, slog.LevelDebug) {
		attrs = append(attrs, slog.String(requestField, sanitize.String(req)))
		if err == nil {
			attrs = append(attrs, slog.String(responseField, sanitize.String(resp)))
		}
	}
	attrs = append(attrs, slog.String("grpc.code", code.String()))
	if err != nil {
		attrs = append(attrs, slog.String("grpc.error", err.Error()))
	}
	ms := logging.DurationToTimeMillisFields(time.Since(start))
	attrs = append(attrs, slog.Any(ms[0].(string), ms[1]))
	l.LogAttrs(ctx, level, "finished call", attrs...)
	return resp, err
}

// splitMethod splits "/package.Service/Method".
func splitMethod(fullMethod string) (service, method string) {
	service, method, _ = strings.Cut(strings.TrimPrefix(fullMethod, "/"), "/")
	return service, method
}

func probeLevel(c codes.Code) logging.Level {
	if c == codes.OK {
		return logging.LevelDebug
	}
	return logging.DefaultServerCodeToLevel(c)
}
