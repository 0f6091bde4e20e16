package manager

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDriverEndpointFlag(t *testing.T) {
	// One endpoint without a name: the one driver, as always.
	o := parse(t, "--driver-endpoint=unix:///run/one.sock")
	assert.Equal(t, "unix:///run/one.sock", o.DriverEndpoint)
	assert.Empty(t, o.DriverEndpoints)
	require.NoError(t, o.Validate())
	endpoints, catchAll := o.driverEndpoints()
	assert.True(t, catchAll)
	assert.Equal(t, []DriverEndpoint{{Endpoint: "unix:///run/one.sock"}}, endpoints)

	// Named endpoints, repeated: they replace the default.
	o = parse(t, "--driver-endpoint=aws=unix:///run/aws.sock", "--driver-endpoint", "onprem=unix:///run/onprem.sock")
	assert.Empty(t, o.DriverEndpoint)
	assert.Equal(t, []DriverEndpoint{{"aws", "unix:///run/aws.sock"}, {"onprem", "unix:///run/onprem.sock"}}, o.DriverEndpoints)
	require.NoError(t, o.Validate())
	endpoints, catchAll = o.driverEndpoints()
	assert.False(t, catchAll)
	assert.Len(t, endpoints, 2)
}

func TestDriverEndpointFlagErrors(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o := DefaultOptions()
	o.AddFlags(fs)
	err := fs.Parse([]string{"--driver-endpoint=unix:///a.sock", "--driver-endpoint=unix:///b.sock"})
	require.ErrorContains(t, err, "without a name can be given once")

	for args, want := range map[string]string{
		"unix:///a.sock|b=unix:///b.sock":     `has no name: a driver without a name serves every provider`,
		"a=unix:///a.sock|a=unix:///b.sock":   `the name "a" is given twice`,
		"Pool_A=unix:///a.sock":               `the name "Pool_A"`,
		"a=unix://relative.sock":              `--driver-endpoint a "unix://relative.sock": want unix:///absolute/path`,
		"a=unix:///a.sock|b=http://host:1234": `--driver-endpoint b "http://host:1234"`,
	} {
		t.Run(args, func(t *testing.T) {
			var flags []string
			for _, a := range strings.Split(args, "|") {
				flags = append(flags, "--driver-endpoint="+a)
			}
			o := parse(t, flags...)
			require.ErrorContains(t, o.Validate(), want)
		})
	}
}
