package driver

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
	"github.com/machina-io/machina/proto/sanitize"
)

// Verbosity of the call log. A finished call is one line at logCallLevel;
// Probe, which the manager's /readyz sends every few seconds, goes to
// logProbeLevel. A failed call is logged at logFailureLevel rather than as
// an error: the caller decides whether the code is a failure at all (a
// NOT_FOUND from GetMachineStatus is an ordinary answer) and reports real
// failures itself, so logging them at V(0) here would double every error
// line. Request and response bodies, with secrets stripped, are at
// logBodyLevel.
const (
	logFailureLevel = 1
	logCallLevel    = 2
	logBodyLevel    = 4
	logProbeLevel   = 5
)

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

// logCall writes the log lines of one finished RPC. Bodies go through
// sanitize.String, which replaces every field marked secret in the proto;
// they are rendered only when their level is enabled.
func logCall(log logr.Logger, rpc string, req, reply any, err error, d time.Duration) {
	log = log.WithValues("method", rpc)
	if m := machineOf(req); m != nil {
		log = log.WithValues("machine", machineKey(m))
	}
	code := Code(err)
	if err != nil {
		log.V(logFailureLevel).Info("Driver call failed", "code", code.String(), "duration", d, "error", status.Convert(err).Message())
	} else {
		log.V(levelOf(rpc)).Info("Driver call", "code", code.String(), "duration", d)
	}
	if body := log.V(max(logBodyLevel, levelOf(rpc))); body.Enabled() {
		response := "<none>"
		if code == codes.OK {
			response = sanitize.String(reply)
		}
		body.Info("Driver call body", "request", sanitize.String(req), "response", response)
	}
}

// levelOf is the level of the one-line log of a successful rpc.
func levelOf(rpc string) int {
	if rpc == "Probe" {
		return logProbeLevel
	}
	return logCallLevel
}
