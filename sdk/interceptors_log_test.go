package sdk

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCallLogRendersOnlyWrittenLines: the request and response of a call
// are rendered (sanitize.String, JSON) when the call's line is written and
// not at all when the log level drops it. A render of this request costs
// dozens of allocations; a dropped line must cost none.
func TestCallLogRendersOnlyWrittenLines(t *testing.T) {
	req := &driverv1alpha1.CreateMachineRequest{
		Machine:  &driverv1alpha1.Machine{Name: "m1"},
		UserData: []byte("#cloud-config secret-token"),
		Secrets:  map[string][]byte{"password": []byte("hunter2")},
	}
	resp := &driverv1alpha1.CreateMachineResponse{ProviderId: "mem:///m1", NodeName: "node-1"}
	fields := []any{requestField, req, responseField, resp, "grpc.code", "OK"}
	ctx := context.Background()

	var out bytes.Buffer
	dropping := slogAdapter(slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelWarn})))
	allocs := testing.AllocsPerRun(100, func() {
		dropping.Log(ctx, logging.LevelInfo, "finished call", fields...)
	})
	assert.Zero(t, allocs, "a dropped line renders nothing")
	assert.Empty(t, out.String())

	writing := slogAdapter(slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo})))
	allocs = testing.AllocsPerRun(100, func() {
		out.Reset()
		writing.Log(ctx, logging.LevelInfo, "finished call", fields...)
	})
	assert.Greater(t, allocs, 20.0, "a written line renders the request and response")
	line := out.String()
	require.Contains(t, line, "mem:///m1")
	require.Contains(t, line, "node-1")
	assert.NotContains(t, line, "hunter2")
	assert.NotContains(t, line, "secret-token")
}
