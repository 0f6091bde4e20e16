package conformance

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
)

func TestConfigDefaults(t *testing.T) {
	c, err := Config{
		Endpoint:     "unix:///run/d.sock",
		MachineClass: MachineClass{ProviderSpec: json.RawMessage(`{"size":"s"}`)},
		Timeouts:     Timeouts{Create: time.Second},
	}.withDefaults()
	require.NoError(t, err)
	assert.Equal(t, DefaultClassName, c.MachineClass.Name)
	assert.Equal(t, DefaultNamePrefix, c.NamePrefix)
	assert.Equal(t, DefaultNamespace, c.Namespace)
	assert.Equal(t, time.Second, c.Timeouts.Create, "a set timeout stays")
	assert.Equal(t, DefaultTimeouts.Delete, c.Timeouts.Delete)
	assert.JSONEq(t, `{"size":"s","machinaConformanceIncompatible":"differs"}`, string(c.IncompatibleProviderSpec))
}

func TestConfigRejects(t *testing.T) {
	valid := func() Config {
		return Config{Endpoint: "unix:///run/d.sock", MachineClass: MachineClass{ProviderSpec: json.RawMessage(`{}`)}}
	}
	for name, tc := range map[string]struct {
		mutate func(*Config)
		want   string
	}{
		"no endpoint":        {func(c *Config) { c.Endpoint = "" }, "Endpoint is required"},
		"relative socket":    {func(c *Config) { c.Endpoint = "unix://run/d.sock" }, "must be absolute"},
		"unknown scheme":     {func(c *Config) { c.Endpoint = "http://x" }, "want unix:///path"},
		"tcp without port":   {func(c *Config) { c.Endpoint = "tcp://localhost" }, "want tcp://host:port"},
		"spec not an object": {func(c *Config) { c.MachineClass.ProviderSpec = json.RawMessage(`[1]`) }, "must be a JSON object"},
		"no spec":            {func(c *Config) { c.MachineClass.ProviderSpec = nil }, "is required"},
		"bad prefix":         {func(c *Config) { c.NamePrefix = "Upper_" }, "NamePrefix"},
		"canary key taken":   {func(c *Config) { c.Secrets = map[string][]byte{CanarySecretKey: nil} }, CanarySecretKey},
		"volume both answers": {func(c *Config) {
			c.Volumes = []VolumeFixture{{Name: "v", Spec: json.RawMessage(`{}`), VolumeID: "x", NotMine: true}}
		}, "exactly one"},
		"volume no answer": {func(c *Config) { c.Volumes = []VolumeFixture{{Name: "v", Spec: json.RawMessage(`{}`)}} }, "exactly one"},
	} {
		t.Run(name, func(t *testing.T) {
			c := valid()
			tc.mutate(&c)
			_, err := c.withDefaults()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestParseEndpoint(t *testing.T) {
	for in, want := range map[string][2]string{
		"unix:///var/run/machina/driver.sock": {"unix", "/var/run/machina/driver.sock"},
		"unix:/tmp/d.sock":                    {"unix", "/tmp/d.sock"},
		"tcp://127.0.0.1:7654":                {"tcp", "127.0.0.1:7654"},
	} {
		network, address, err := parseEndpoint(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, [2]string{network, address}, in)
	}
}

func TestCodeName(t *testing.T) {
	assert.Equal(t, "INVALID_ARGUMENT", codeName(codes.InvalidArgument))
	assert.Equal(t, "DEADLINE_EXCEEDED", codeName(codes.DeadlineExceeded))
	assert.Equal(t, "CANCELLED", codeName(codes.Canceled))
	assert.Equal(t, "OK", codeName(codes.OK))
	assert.Equal(t, "UNAUTHENTICATED", codeName(codes.Unauthenticated))
}

func TestEncodeGRPCTimeout(t *testing.T) {
	assert.Equal(t, "300m", encodeGRPCTimeout(300*time.Millisecond))
	// Rounded up, never down: the driver's deadline must not come before
	// the one the suite measures against.
	assert.Equal(t, "1m", encodeGRPCTimeout(time.Microsecond))
	assert.Equal(t, "2m", encodeGRPCTimeout(1500*time.Microsecond))
	assert.Equal(t, "100000S", encodeGRPCTimeout(100000*time.Second))
}

func TestTestsHaveSectionsAndUniqueNames(t *testing.T) {
	seen := map[string]bool{}
	for _, ti := range Tests() {
		assert.False(t, seen[ti.Name], "duplicate %s", ti.Name)
		seen[ti.Name] = true
		assert.Regexp(t, `^[A-Z][A-Za-z]+/[a-z_]+$`, ti.Name)
		assert.Regexp(t, `^§\d+(\.\d+)*$`, ti.Section, ti.Name)
		assert.NotEmpty(t, ti.Checks, ti.Name)
		assert.NotEmpty(t, ti.Capability, ti.Name)
	}
}
