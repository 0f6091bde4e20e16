package machine

import (
	"context"

	"github.com/go-logr/logr"
)

// withoutClientLogs returns ctx with a logger that discards everything, for API calls
// that carry Secrets. client-go logs request and response bodies with the
// context's logger at high verbosity (V(8)); a Secret read or written with
// the reconcile's context would put its data into the controller's log.
// The controller's own log lines keep using the scope's logger.
func withoutClientLogs(ctx context.Context) context.Context {
	return logr.NewContext(ctx, logr.Discard())
}
