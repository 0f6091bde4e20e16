package main

import (
	"flag"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/machina-io/machina/drivers/inmemory"
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

func parse(t *testing.T, args []string, env map[string]string) (*config, error) {
	t.Helper()
	return parseConfig(flag.NewFlagSet("test", flag.ContinueOnError), args, func(k string) string { return env[k] })
}

func TestParseConfigDefaults(t *testing.T) {
	c, err := parse(t, nil, nil)
	require.NoError(t, err)
	assert.Empty(t, c.endpoint)
	assert.Equal(t, slog.LevelInfo, c.logLevel)
	assert.Equal(t, inmemory.DefaultCSIDriverName, c.opts.CSIDriverName)
	assert.Empty(t, c.opts.DisabledCapabilities)
	assert.Empty(t, c.opts.Faults)
	assert.Zero(t, c.opts.CrashAfter)
	assert.False(t, c.opts.RequireInitialization)
}

func TestParseConfigFlags(t *testing.T) {
	c, err := parse(t, []string{
		"--endpoint=unix:///tmp/x.sock", "--require-initialization", "--csi-driver-name=disk.example.com",
		"--disable-capability=initialize,list", "--disable-capability", "volumes",
		"--fault", "CreateMachine:code=UNAVAILABLE,count=2", "--fault=DeleteMachine:latency=1s;Probe:code=INTERNAL",
		"--crash-after=5", "--state-file=/tmp/state.json", "--log-level=debug",
		"--provider=pool-a,pool-b", "--provider", "pool-c",
	}, nil)
	require.NoError(t, err)
	assert.Equal(t, "unix:///tmp/x.sock", c.endpoint)
	assert.True(t, c.opts.RequireInitialization)
	assert.Equal(t, "disk.example.com", c.opts.CSIDriverName)
	assert.Equal(t, []driverv1alpha1.Capability_Type{
		driverv1alpha1.Capability_TYPE_INITIALIZE_MACHINE,
		driverv1alpha1.Capability_TYPE_LIST_MACHINES,
		driverv1alpha1.Capability_TYPE_GET_VOLUME_IDS,
	}, c.opts.DisabledCapabilities)
	assert.Equal(t, map[string]inmemory.Fault{
		inmemory.MethodCreateMachine: {Code: codes.Unavailable, Count: 2},
		inmemory.MethodDeleteMachine: {Latency: time.Second},
		inmemory.MethodProbe:         {Code: codes.Internal},
	}, c.opts.Faults)
	assert.Equal(t, 5, c.opts.CrashAfter)
	assert.Equal(t, "/tmp/state.json", c.opts.StateFile)
	assert.Equal(t, slog.LevelDebug, c.logLevel)
	assert.Equal(t, []string{"pool-a", "pool-b", "pool-c"}, c.opts.Providers)
}

func TestParseConfigEnvironment(t *testing.T) {
	env := map[string]string{
		"MACHINA_INMEMORY_FAULTS":                 "GetMachineStatus:code=NOT_FOUND,every=2",
		"MACHINA_INMEMORY_CRASH_AFTER":            "3",
		"MACHINA_INMEMORY_DISABLE_CAPABILITY":     "list",
		"MACHINA_INMEMORY_REQUIRE_INITIALIZATION": "true",
		"MACHINA_INMEMORY_PROVIDER":               "pool-a,pool-b",
		"MACHINA_INMEMORY_ENDPOINT":               "unix:///ignored.sock", // the SDK's variable is MACHINA_DRIVER_ENDPOINT
	}
	c, err := parse(t, nil, env)
	require.NoError(t, err)
	assert.Equal(t, map[string]inmemory.Fault{inmemory.MethodGetMachineStatus: {Code: codes.NotFound, Every: 2}}, c.opts.Faults)
	assert.Equal(t, 3, c.opts.CrashAfter)
	assert.Equal(t, []driverv1alpha1.Capability_Type{driverv1alpha1.Capability_TYPE_LIST_MACHINES}, c.opts.DisabledCapabilities)
	assert.True(t, c.opts.RequireInitialization)
	assert.Equal(t, []string{"pool-a", "pool-b"}, c.opts.Providers)
	assert.Empty(t, c.endpoint)

	// The command line wins over the environment.
	c, err = parse(t, []string{"--crash-after=9", "--fault=CreateMachine:code=INTERNAL"}, env)
	require.NoError(t, err)
	assert.Equal(t, 9, c.opts.CrashAfter)
	assert.Equal(t, map[string]inmemory.Fault{inmemory.MethodCreateMachine: {Code: codes.Internal}}, c.opts.Faults)
}

func TestParseConfigErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		env  map[string]string
	}{
		"bad capability":   {args: []string{"--disable-capability=teleport"}},
		"bad fault":        {args: []string{"--fault=CreateMachine:code=NOPE"}},
		"bad fault in env": {env: map[string]string{"MACHINA_INMEMORY_FAULTS": "CreateMachine"}},
		"bad number":       {env: map[string]string{"MACHINA_INMEMORY_CRASH_AFTER": "many"}},
		"negative crash":   {args: []string{"--crash-after=-1"}},
		"unknown flag":     {args: []string{"--colour=blue"}},
		"stray argument":   {args: []string{"serve"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := parse(t, tc.args, tc.env)
			assert.Error(t, err)
		})
	}
}
