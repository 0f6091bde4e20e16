package manager

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/testenv"
)

// TestCheckNamespaces: only the API server's definite NotFound of the
// namespace stops the manager; an identity that may not read namespaces,
// or an API server that does not answer, lets it go on.
func TestCheckNamespaces(t *testing.T) {
	logTo(t)
	control := testenv.Start(t)
	ctx := t.Context()
	log := ctrl.Log.WithName("test")

	err := checkNamespaces(ctx, control.Client, log, map[string]string{"default": "--namespace", "absent": "--leader-elect-resource-namespace"})
	require.Error(t, err)
	assert.Equal(t, `namespace "absent" (--leader-elect-resource-namespace) does not exist in the control cluster: `+
		`create it (kubectl create namespace absent) or name another with --leader-elect-resource-namespace`, err.Error())
	require.NoError(t, checkNamespaces(ctx, control.Client, log, map[string]string{"default": "--namespace"}))

	// Forbidden: a user without rights (impersonated by the admin).
	nobody := rest.CopyConfig(control.Config)
	nobody.Impersonate = rest.ImpersonationConfig{UserName: "nobody"}
	forbidden, err := client.New(nobody, client.Options{Scheme: control.Scheme})
	require.NoError(t, err)
	require.NoError(t, checkNamespaces(ctx, forbidden, log, map[string]string{"absent": "--namespace"}))

	// Unreachable: a port nobody listens on.
	gone := rest.CopyConfig(control.Config)
	gone.Host = "https://" + freeAddress(t)
	unreachable, err := client.New(gone, client.Options{Scheme: control.Scheme, Mapper: control.Client.RESTMapper()})
	require.NoError(t, err)
	start := time.Now()
	require.NoError(t, checkNamespaces(ctx, unreachable, log, map[string]string{"absent": "--namespace"}))
	assert.Less(t, time.Since(start), namespaceCheckTimeout+5*time.Second)
}

// TestRunFailsWithoutItsNamespace: the manager says at once that its
// namespace does not exist, before it waits for its driver.
func TestRunFailsWithoutItsNamespace(t *testing.T) {
	logTo(t)
	control := testenv.Start(t)
	opts := DefaultOptions()
	opts.ControlConfig = control.Config
	opts.Namespace = "absent"
	opts.DriverEndpoint = "unix:///nonexistent/driver.sock"
	opts.LeaderElect = false
	opts.MetricsBindAddress, opts.HealthProbeBindAddress = "0", "0"
	opts.skipNameValidation = true
	m, err := New(opts)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = m.Run(ctx)
	require.ErrorContains(t, err, `namespace "absent" (--namespace) does not exist in the control cluster`)
	require.NoError(t, ctx.Err(), "Run returned the error, not the test's deadline")
}
