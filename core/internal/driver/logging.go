package driver

import (
	"context"

	"github.com/go-logr/logr"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
	"github.com/machina-io/machina/proto/sanitize"
)

// Verbosity of the call log, written by go-grpc-middleware's logging
// interceptor. A finished call ("finished call") is one line at
// logCallLevel; Probe, which the manager's /readyz sends every few seconds,
// goes to logProbeLevel. A failed call is logged at logFailureLevel rather
// than as an error: the caller decides whether the code is a failure at all
// (a NOT_FOUND from GetMachineStatus is an ordinary answer) and reports real
// failures itself, so logging them at V(0) here would double every error
// line. The request and the response ("request sent", "response
// received"), with secrets stripped, are at logBodyLevel.
const (
	logFailureLevel = 1
	logCallLevel    = 2
	logBodyLevel    = 4
	logProbeLevel   = 5
)

// Log field keys the interceptor writes: the method, and the payloads of
// the "request sent" and "response received" lines.
const (
	methodField   = "grpc.method"
	requestField  = "grpc.request.content"
	responseField = "grpc.response.content"
)

// codeLevel tells the interceptor a successful call from a failed one; the
// verbosity of each line is decided by callVerbosity.
func codeLevel(c codes.Code) logging.Level {
	if c == codes.OK {
		return logging.LevelDebug
	}
	return logging.LevelInfo
}

// machineField adds the Machine a request is about to every line of its
// call, as "machine"="namespace/name".
func machineField(_ context.Context, c interceptors.CallMeta) logging.Fields {
	if m := machineOf(c.ReqOrNil); m != nil {
		return logging.Fields{"machine", machineKey(m)}
	}
	return nil
}

// logCall writes one line of the logging interceptor to the call's logger
// (loggerFor) at the verbosity callVerbosity gives. Every proto message
// among the fields, the payloads above all, is rendered with
// sanitize.String, which replaces every field marked secret in the proto;
// nothing is rendered for a line whose level is off.
func (c *Client) logCall(ctx context.Context, lvl logging.Level, msg string, fields ...any) {
	var method string
	body := false
	it := logging.Fields(fields).Iterator()
	for it.Next() {
		switch k, v := it.At(); k {
		case methodField:
			method, _ = v.(string)
		case requestField, responseField:
			body = true
		}
	}
	log := c.loggerFor(ctx).V(callVerbosity(lvl, method, body))
	if !log.Enabled() {
		return
	}
	kv := make([]any, 0, len(fields)+2)
	kv = append(kv, "driver", c.Name())
	for it := logging.Fields(fields).Iterator(); it.Next(); {
		k, v := it.At()
		if m, ok := v.(proto.Message); ok {
			v = sanitize.String(m)
		}
		kv = append(kv, k, v)
	}
	log.Info(msg, kv...)
}

// callVerbosity is the verbosity of one line of the call log: lvl is the
// interceptor's (codeLevel's, or its own complaint's), method the RPC, body
// whether the line carries a payload.
func callVerbosity(lvl logging.Level, method string, body bool) int {
	switch {
	case lvl > logging.LevelInfo:
		// The interceptor's own complaints (a payload that is not a proto
		// message) are programming errors.
		return 0
	case lvl == logging.LevelInfo:
		return logFailureLevel
	}
	v := logCallLevel
	if body {
		v = logBodyLevel
	}
	if method == "Probe" {
		v = max(v, logProbeLevel)
	}
	return v
}

// loggerFor returns the logger of a call: the one in ctx (a reconciler's,
// carrying the object's keys) or else the client's.
func (c *Client) loggerFor(ctx context.Context) logr.Logger {
	if log, err := logr.FromContext(ctx); err == nil {
		return log
	}
	return c.opts.Logger
}

// machineOf returns the Machine a request is about, if any.
func machineOf(req any) *driverv1alpha1.Machine {
	if r, ok := req.(interface {
		GetMachine() *driverv1alpha1.Machine
	}); ok {
		return r.GetMachine()
	}
	return nil
}
