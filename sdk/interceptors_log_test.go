package sdk

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
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
	info := &grpc.UnaryServerInfo{FullMethod: driverv1alpha1.MachineService_CreateMachine_FullMethodName}
	handler := func(context.Context, any) (any, error) { return resp, nil }
	ctx := context.Background()
	serverLogging := func(out *bytes.Buffer, level slog.Level) *Server {
		return &Server{opts: options{logger: slog.New(slog.NewJSONHandler(out, &slog.HandlerOptions{Level: level}))}}
	}

	var out bytes.Buffer
	dropping := serverLogging(&out, slog.LevelWarn)
	allocs := testing.AllocsPerRun(100, func() {
		_, _ = dropping.logCalls(ctx, req, info, handler)
	})
	assert.Zero(t, allocs, "a dropped line renders nothing")
	assert.Empty(t, out.String())

	writing := serverLogging(&out, slog.LevelInfo)
	allocs = testing.AllocsPerRun(100, func() {
		out.Reset()
		_, _ = writing.logCalls(ctx, req, info, handler)
	})
	assert.Greater(t, allocs, 20.0, "a written line renders the request and response")
	line := out.String()
	require.Contains(t, line, `"msg":"finished call"`)
	require.Contains(t, line, `"grpc.method":"CreateMachine"`)
	require.Contains(t, line, `"grpc.service":"machina.driver.v1alpha1.MachineService"`)
	require.Contains(t, line, `"grpc.code":"OK"`)
	require.Contains(t, line, "mem:///m1")
	require.Contains(t, line, "node-1")
	assert.NotContains(t, line, "hunter2")
	assert.NotContains(t, line, "secret-token")
}
