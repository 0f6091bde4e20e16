package driver

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

func TestConnectWaitsForDriverThatStartsLater(t *testing.T) {
	path := socketPath(t)
	logs := &logBuffer{}

	type result struct {
		c   *Client
		err error
	}
	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		c, err := Connect(ctx, "unix://"+path, testOptions(logs))
		done <- result{c, err}
	}()

	// Connect must still be waiting, and say so, before the driver exists.
	require.Eventually(t, func() bool { return logs.contains("Still waiting for driver") }, 10*time.Second, 10*time.Millisecond)
	select {
	case r := <-done:
		t.Fatalf("Connect returned before the driver started: %v", r.err)
	default:
	}

	d := newTestDriver(driverv1alpha1.Capability_TYPE_LIST_MACHINES)
	serve(t, path, d)

	r := <-done
	require.NoError(t, r.err)
	t.Cleanup(func() { _ = r.c.Close() })
	assert.Equal(t, testDriverName, r.c.Info().Name)
	assert.Equal(t, "v1.0.0", r.c.Info().VendorVersion)
	assert.True(t, r.c.Has(driverv1alpha1.Capability_TYPE_LIST_MACHINES))
	assert.Equal(t, "unix://"+path, r.c.Endpoint())
}

func TestConnectGivesUpWhenContextEnds(t *testing.T) {
	path := socketPath(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := Connect(ctx, "unix://"+path, testOptions(&logBuffer{}))
	require.Error(t, err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 5*time.Second)
}

func TestConnectProbesUntilReady(t *testing.T) {
	notReady := probeAnswer{ready: ptrTo(false)}
	unavailable := probeAnswer{err: status.Error(codes.Unavailable, "cloud login in progress")}
	tests := []struct {
		name       string
		answers    []probeAnswer
		wantProbes int
	}{
		{"ready=false then true", []probeAnswer{notReady, notReady, {ready: ptrTo(true)}}, 3},
		{"ready=false then unset", []probeAnswer{notReady, {}}, 2},
		{"UNAVAILABLE then ready", []probeAnswer{unavailable, unavailable, {ready: ptrTo(true)}}, 3},
		{"unset at once", []probeAnswer{{}}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := socketPath(t)
			d := newTestDriver()
			d.setProbes(tt.answers...)
			serve(t, path, d)
			logs := &logBuffer{}
			c := connect(t, path, testOptions(logs))
			assert.Equal(t, tt.wantProbes, d.callCount("Probe"))
			// The identity is read only once the driver is ready.
			assert.Equal(t, 1, d.callCount("GetPluginInfo"))
			assert.Equal(t, testDriverName, c.Info().Name)
			if tt.wantProbes > 1 {
				assert.True(t, logs.contains("Still waiting for driver to become ready"))
			}
		})
	}
}

func TestConnectFailsOnFatalProbeError(t *testing.T) {
	path := socketPath(t)
	d := newTestDriver()
	d.setProbes(probeAnswer{err: status.Error(codes.PermissionDenied, "bad cloud credentials")})
	serve(t, path, d)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := Connect(ctx, "unix://"+path, testOptions(&logBuffer{}))
	require.Error(t, err)
	assert.Equal(t, codes.PermissionDenied, Code(err))
	assert.Contains(t, err.Error(), "bad cloud credentials")
	assert.NoError(t, ctx.Err(), "a fatal probe error must not wait for the context")
	assert.Equal(t, 1, d.callCount("Probe"))
}

func TestConnectDriverNotServingThisAPI(t *testing.T) {
	path := socketPath(t)
	serve(t, path, nil) // a gRPC server with none of our services

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := Connect(ctx, "unix://"+path, testOptions(&logBuffer{}))
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrNotServed)
	assert.Contains(t, err.Error(), "driver does not serve machina.driver.v1alpha1")
}

// identityOnlyDriver serves Probe but no GetPluginInfo, as a driver of
// another API version with a compatible Probe might.
type identityOnlyDriver struct {
	driverv1alpha1.UnimplementedIdentityServiceServer
}

func (identityOnlyDriver) Probe(context.Context, *driverv1alpha1.ProbeRequest) (*driverv1alpha1.ProbeResponse, error) {
	return &driverv1alpha1.ProbeResponse{}, nil
}

func TestConnectGetPluginInfoUnimplemented(t *testing.T) {
	path := socketPath(t)
	startServer(t, listenUnix(t, path), func(srv *grpc.Server) {
		driverv1alpha1.RegisterIdentityServiceServer(srv, identityOnlyDriver{})
	})

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := Connect(ctx, "unix://"+path, testOptions(&logBuffer{}))
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrNotServed)
	assert.Contains(t, err.Error(), "GetPluginInfo answered UNIMPLEMENTED")
}

func TestConnectRejectsInvalidDriverName(t *testing.T) {
	for _, name := range []string{"", "Upper.Case", "-leading.dash", "trailing.dot.", string(make([]byte, 64))} {
		t.Run(name, func(t *testing.T) {
			path := socketPath(t)
			d := newTestDriver()
			d.name = name
			serve(t, path, d)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_, err := Connect(ctx, "unix://"+path, testOptions(&logBuffer{}))
			require.Error(t, err)
			assert.Contains(t, err.Error(), "driver name")
		})
	}
}

func TestConnectIgnoresUnknownCapabilities(t *testing.T) {
	path := socketPath(t)
	d := newTestDriver(driverv1alpha1.Capability_TYPE_GET_VOLUME_IDS, driverv1alpha1.Capability_Type(99), driverv1alpha1.Capability_TYPE_UNSPECIFIED)
	serve(t, path, d)
	logs := &logBuffer{}
	c := connect(t, path, testOptions(logs))
	assert.Equal(t, []driverv1alpha1.Capability_Type{driverv1alpha1.Capability_TYPE_GET_VOLUME_IDS}, c.Capabilities())
	assert.True(t, logs.hasLine(`"msg"="Ignoring unknown driver capability"`, `"capability"=99`), logs.String())
}

func TestParseEndpoint(t *testing.T) {
	tests := []struct {
		endpoint   string
		wantTarget string
		wantDialer bool
		wantErr    string
	}{
		{"unix:///var/run/machina/driver.sock", "passthrough:///localhost", true, ""},
		{"tcp://127.0.0.1:7070", "passthrough:///127.0.0.1:7070", false, ""},
		{"unix://relative.sock", "", false, "must be absolute"},
		{"tcp://no-port", "", false, "missing port"},
		{"/var/run/machina/driver.sock", "", false, "want unix:///path or tcp://host:port"},
		{"http://localhost:80", "", false, "want unix:///path or tcp://host:port"},
	}
	for _, tt := range tests {
		t.Run(tt.endpoint, func(t *testing.T) {
			target, dialer, err := parseEndpoint(tt.endpoint)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantTarget, target)
			assert.Equal(t, tt.wantDialer, dialer != nil)
		})
	}
}

func TestConnectOverTCP(t *testing.T) {
	d := newTestDriver()
	addr := serveTCP(t, d)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := Connect(ctx, "tcp://"+addr, testOptions(&logBuffer{}))
	require.NoError(t, err)
	defer func() { _ = c.Close() }()
	resp, err := c.GetMachineStatus(ctx, &driverv1alpha1.GetMachineStatusRequest{Machine: testMachine("m1"), MachineClass: testClass()})
	require.NoError(t, err)
	assert.Equal(t, "test:///m1", resp.GetProviderId())
}
