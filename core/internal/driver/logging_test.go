package driver

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
	"github.com/machina-io/machina/proto/sanitize"
)

const canary = "canary-s3cr3t-7d1f"

func TestLogsNeverContainSecrets(t *testing.T) {
	path := socketPath(t)
	d := newTestDriver(driverv1alpha1.Capability_TYPE_INITIALIZE_MACHINE, driverv1alpha1.Capability_TYPE_LIST_MACHINES)
	d.onMachineCall = func(_ context.Context, rpc string, _ *driverv1alpha1.Machine) error {
		if rpc == "DeleteMachine" {
			return status.Error(codes.PermissionDenied, "credentials rejected")
		}
		return nil
	}
	serve(t, path, d)
	logs := &logBuffer{}
	c := connect(t, path, testOptions(logs)) // every level enabled
	ctx := context.Background()

	secrets := map[string][]byte{"password": []byte(canary), "token": []byte(canary)}
	m, class := testMachine("m1"), testClass()
	_, err := c.CreateMachine(ctx, &driverv1alpha1.CreateMachineRequest{Machine: m, MachineClass: class, Secrets: secrets, UserData: []byte(canary)})
	require.NoError(t, err)
	_, err = c.InitializeMachine(ctx, &driverv1alpha1.InitializeMachineRequest{Machine: m, MachineClass: class, Secrets: secrets})
	require.NoError(t, err)
	_, err = c.GetMachineStatus(ctx, &driverv1alpha1.GetMachineStatusRequest{Machine: m, MachineClass: class, Secrets: secrets})
	require.NoError(t, err)
	_, err = c.ListMachines(ctx, &driverv1alpha1.ListMachinesRequest{MachineClass: class, Secrets: secrets})
	require.NoError(t, err)
	_, err = c.DeleteMachine(ctx, &driverv1alpha1.DeleteMachineRequest{Machine: m, MachineClass: class, Secrets: secrets})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), canary)

	out := logs.String()
	// protojson renders bytes fields in base64, so a leaked secret would
	// show up encoded: look for both forms.
	assert.NotContains(t, out, canary)
	assert.NotContains(t, out, strings.TrimRight(base64.StdEncoding.EncodeToString([]byte(canary)), "="))
	// The bodies were logged, with the secrets replaced, so the checks
	// above looked at real request renderings.
	redactedBytes := base64.StdEncoding.EncodeToString([]byte(sanitize.Redacted))
	assert.True(t, logs.hasLine(`"level"=4`, `"msg"="request sent"`, `"grpc.method"="CreateMachine"`, `"machine"="default/m1"`, `\"password\":\"`+redactedBytes, `\"userData\":\"`+redactedBytes), out)
	assert.True(t, logs.hasLine(`"level"=4`, `"msg"="response received"`, `"grpc.method"="CreateMachine"`, `"machine"="default/m1"`, `"grpc.response.content"=`), out)
	assert.True(t, logs.hasLine(`"msg"="request sent"`, `"grpc.method"="ListMachines"`, `\"token\":\"`+redactedBytes), out)
	assert.True(t, logs.hasLine(`"level"=2`, `"msg"="finished call"`, `"grpc.method"="GetMachineStatus"`, `"grpc.code"="OK"`, `"grpc.duration"=`), out)
	assert.True(t, logs.hasLine(`"level"=1`, `"msg"="finished call"`, `"grpc.method"="DeleteMachine"`, `"grpc.code"="PermissionDenied"`, `"grpc.error"=`, `credentials rejected`), out)
	assert.False(t, logs.hasLine(`"msg"="response received"`, `"grpc.method"="DeleteMachine"`), "a failed call has no response: %s", out)
}

func TestLogLevels(t *testing.T) {
	path := socketPath(t)
	serve(t, path, newTestDriver())
	opts := testOptions(&logBuffer{})
	c := connect(t, path, opts)
	req := &driverv1alpha1.GetMachineStatusRequest{Machine: testMachine("m1"), MachineClass: testClass()}

	for _, tt := range []struct {
		verbosity    int
		wantCallLine bool
		wantBody     bool
	}{
		{0, false, false},
		{2, true, false},
		{4, true, true},
	} {
		logs := &logBuffer{}
		// A logger in the call's context (a reconciler's) takes precedence.
		ctx := logr.NewContext(context.Background(), logs.logger(tt.verbosity).WithValues("reconciler", "machine"))
		_, err := c.GetMachineStatus(ctx, req)
		require.NoError(t, err)
		assert.Equal(t, tt.wantCallLine, logs.hasLine(`"msg"="finished call"`, `"reconciler"="machine"`), "verbosity %d: %s", tt.verbosity, logs)
		assert.Equal(t, tt.wantBody, logs.hasLine(`"msg"="request sent"`), "verbosity %d: %s", tt.verbosity, logs)
	}

	// Readiness probes are frequent: their success lines need V(5).
	logs := &logBuffer{}
	ctx := logr.NewContext(context.Background(), logs.logger(4))
	require.NoError(t, c.Ready(ctx))
	assert.False(t, logs.hasLine(`"grpc.method"="Probe"`), logs.String())
	// and are there at V(5).
	logs = &logBuffer{}
	ctx = logr.NewContext(context.Background(), logs.logger(5))
	require.NoError(t, c.Ready(ctx))
	assert.True(t, logs.hasLine(`"level"=5`, `"msg"="finished call"`, `"grpc.method"="Probe"`), logs.String())
}
