package driver

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// servedBy starts a test driver that lists providers and connects to it
// under name.
func servedBy(t *testing.T, name string, providers ...string) (*Client, *testDriver, string) {
	t.Helper()
	path := socketPath(t)
	d := newTestDriver()
	d.providers = providers
	serve(t, path, d)
	opts := testOptions(&logBuffer{})
	opts.Name = name
	return connect(t, path, opts), d, path
}

func TestSetRoutesByProvider(t *testing.T) {
	a, _, _ := servedBy(t, "pool-a", "AWS", "inmemory")
	b, _, _ := servedBy(t, "pool-b", "virtualnode")
	set, err := NewSet([]*Client{a, b}, false)
	require.NoError(t, err)

	got, err := set.ForProvider("inmemory")
	require.NoError(t, err)
	assert.Same(t, a, got)
	got, err = set.ForProvider("virtualnode")
	require.NoError(t, err)
	assert.Same(t, b, got)

	_, err = set.ForProvider("GCP")
	require.ErrorIs(t, err, ErrNoDriver)
	var noDriver *NoDriverError
	require.True(t, errors.As(err, &noDriver))
	assert.Equal(t, "GCP", noDriver.Provider)
	assert.Empty(t, noDriver.Claimants)
	assert.Contains(t, err.Error(), `"GCP"`)
	_, err = set.ForProvider("")
	require.ErrorIs(t, err, ErrNoDriver, "a class without a provider has no driver among several")
	assert.Equal(t, []*Client{a, b}, set.Drivers())
}

func TestSetRefusesOverlappingProviders(t *testing.T) {
	a, _, _ := servedBy(t, "pool-a", "AWS", "inmemory")
	b, _, _ := servedBy(t, "pool-b", "virtualnode", "inmemory")
	_, err := NewSet([]*Client{a, b}, false)
	require.Error(t, err)
	assert.Equal(t, `drivers "pool-a" and "pool-b" both serve provider "inmemory"; each provider must have one driver`, err.Error())
}

func TestSetRefusesADriverWithoutProviders(t *testing.T) {
	a, _, _ := servedBy(t, "pool-a", "AWS")
	b, _, _ := servedBy(t, "pool-b")
	_, err := NewSet([]*Client{a, b}, false)
	require.ErrorContains(t, err, `driver "pool-b" (`+testDriverName+`) lists no providers in GetPluginInfo`)
}

func TestSetRefusesTwoDriversOfOneName(t *testing.T) {
	a, _, _ := servedBy(t, "pool-a", "AWS")
	b, _, _ := servedBy(t, "pool-a", "GCP")
	_, err := NewSet([]*Client{a, b}, false)
	require.ErrorContains(t, err, `two drivers are named "pool-a"`)
}

// The single driver without a name serves every provider, listed or not,
// as a manager with one driver always did.
func TestSetCatchAll(t *testing.T) {
	a, _, _ := servedBy(t, "", "AWS")
	set, err := NewSet([]*Client{a}, true)
	require.NoError(t, err)
	for _, p := range []string{"AWS", "GCP", ""} {
		got, err := set.ForProvider(p)
		require.NoError(t, err)
		assert.Same(t, a, got)
	}
	b, _, _ := servedBy(t, "pool-b", "GCP")
	_, err = NewSet([]*Client{a, b}, true)
	require.ErrorContains(t, err, "must be the only one")
}

// A driver that restarts listing other providers is routed to by what it
// says now; one that then claims another driver's provider makes that
// provider driverless rather than served by either.
func TestSetFollowsARestartedDriver(t *testing.T) {
	a, _, _ := servedBy(t, "pool-a", "AWS")
	path := socketPath(t)
	d := newTestDriver()
	d.providers = []string{"GCP"}
	stop := serve(t, path, d)
	opts := testOptions(&logBuffer{})
	opts.Name = "pool-b"
	b := connect(t, path, opts)
	set, err := NewSet([]*Client{a, b}, false)
	require.NoError(t, err)

	stop()
	second := newTestDriver()
	second.providers = []string{"GCP", "AWS"}
	serve(t, path, second)
	require.Eventually(t, func() bool { return len(b.Providers()) == 2 }, 10*time.Second, 10*time.Millisecond)

	_, err = set.ForProvider("AWS")
	var noDriver *NoDriverError
	require.ErrorAs(t, err, &noDriver)
	assert.Equal(t, []string{"pool-a", "pool-b"}, noDriver.Claimants)
	assert.Contains(t, err.Error(), "claimed by several drivers (pool-a, pool-b)")
	got, err := set.ForProvider("GCP")
	require.NoError(t, err)
	assert.Same(t, b, got)
	_, err = b.GetMachineStatus(context.Background(), &driverv1alpha1.GetMachineStatusRequest{Machine: testMachine("m1"), MachineClass: testClass()})
	require.NoError(t, err)
}

func TestIdentityRefusesBadProviders(t *testing.T) {
	for name, providers := range map[string][]string{
		"empty":     {"AWS", ""},
		"duplicate": {"AWS", "AWS"},
		"too long":  {strings.Repeat("a", 64)},
	} {
		t.Run(name, func(t *testing.T) {
			path := socketPath(t)
			d := newTestDriver()
			d.providers = providers
			serve(t, path, d)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := Connect(ctx, "unix://"+path, testOptions(&logBuffer{}))
			require.ErrorContains(t, err, "GetPluginInfo")
		})
	}
}
