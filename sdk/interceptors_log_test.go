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

// TestCallLogRendersOnlyWrittenLines: a call's line names the call and its
// Machine at the default level and renders the request and response
// (sanitize.String, JSON) only at debug level, as the core does; a line the
// level drops renders nothing. A render of this request costs dozens of
// allocations.
func TestCallLogRendersOnlyWrittenLines(t *testing.T) {
	req := &driverv1alpha1.CreateMachineRequest{
		Machine:  &driverv1alpha1.Machine{Name: "m1", Namespace: "ns"},
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
	write := func(level slog.Level) (float64, string) {
		var out bytes.Buffer
		s := serverLogging(&out, level)
		allocs := testing.AllocsPerRun(100, func() {
			out.Reset()
			_, _ = s.logCalls(ctx, req, info, handler)
		})
		return allocs, out.String()
	}

	allocs, line := write(slog.LevelWarn)
	assert.Zero(t, allocs, "a dropped line renders nothing")
	assert.Empty(t, line)

	infoAllocs, line := write(slog.LevelInfo)
	require.Contains(t, line, `"msg":"finished call"`)
	require.Contains(t, line, `"grpc.method":"CreateMachine"`)
	require.Contains(t, line, `"grpc.service":"machina.driver.v1alpha1.MachineService"`)
	require.Contains(t, line, `"grpc.code":"OK"`)
	require.Contains(t, line, `"machine":"ns/m1"`)
	assert.NotContains(t, line, requestField, "the request is a debug field")
	assert.NotContains(t, line, "mem:///m1", "the response is a debug field")

	debugAllocs, line := write(slog.LevelDebug)
	assert.Greater(t, debugAllocs, infoAllocs+20, "at debug level the request and response are rendered")
	require.Contains(t, line, `"machine":"ns/m1"`)
	require.Contains(t, line, "mem:///m1")
	require.Contains(t, line, "node-1")
	assert.NotContains(t, line, "hunter2")
	assert.NotContains(t, line, "secret-token")
}
