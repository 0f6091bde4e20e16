package main

import (
	"encoding/json"
	"flag"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/machina-io/machina/core/manager"
)

// managerConfigz is the document the manager serves at /configz for o: its
// flags, as they print, under "machina-manager" (core/manager/configz.go
// builds it the same way from the same AddFlags).
func managerConfigz(t *testing.T, o manager.Options) []byte {
	t.Helper()
	fs := flag.NewFlagSet("configz", flag.ContinueOnError)
	o.AddFlags(fs)
	values := map[string]string{}
	fs.VisitAll(func(f *flag.Flag) { values[f.Name] = f.Value.String() })
	body, err := json.MarshalIndent(map[string]map[string]string{"machina-manager": values}, "", "  ")
	require.NoError(t, err)
	return body
}

func whyFlags(t *testing.T, args ...string) (*pflag.FlagSet, *timeoutFlags) {
	t.Helper()
	tf := &timeoutFlags{}
	fs := pflag.NewFlagSet("why", pflag.ContinueOnError)
	tf.addFlags(fs)
	require.NoError(t, fs.Parse(args))
	return fs, tf
}

func TestConfigzOfTheManagerSetsTheTimeouts(t *testing.T) {
	o := manager.DefaultOptions()
	o.MachineCreationTimeout = 35 * time.Minute
	o.MachineHealthTimeout = 90 * time.Second
	o.MachineDrainTimeout = 0
	o.NodeConditions = []string{"DiskPressure", "FrequentKubeletRestart"}
	values, err := parseConfigz(managerConfigz(t, o))
	require.NoError(t, err)

	fs, tf := whyFlags(t)
	require.NoError(t, tf.applyConfigz(values, fs))
	assert.Equal(t, 35*time.Minute, tf.creation)
	assert.Equal(t, 90*time.Second, tf.health)
	assert.Equal(t, time.Duration(0), tf.drain)
	assert.Equal(t, []string{"DiskPressure", "FrequentKubeletRestart"}, tf.nodeConditions)
}

func TestConfigzOfDefaultManagerMatchesTheDefaults(t *testing.T) {
	// The plugin's own defaults are the manager's: a default manager's
	// /configz changes nothing.
	values, err := parseConfigz(managerConfigz(t, manager.DefaultOptions()))
	require.NoError(t, err)
	fs, tf := whyFlags(t)
	want := *tf
	require.NoError(t, tf.applyConfigz(values, fs))
	assert.Equal(t, want, *tf)
}

func TestExplicitFlagsWinOverConfigz(t *testing.T) {
	o := manager.DefaultOptions()
	o.MachineCreationTimeout = 35 * time.Minute
	o.MachineHealthTimeout = 90 * time.Second
	values, err := parseConfigz(managerConfigz(t, o))
	require.NoError(t, err)
	fs, tf := whyFlags(t, "--machine-health-timeout=5m")
	require.NoError(t, tf.applyConfigz(values, fs))
	assert.Equal(t, 35*time.Minute, tf.creation)
	assert.Equal(t, 5*time.Minute, tf.health, "the flag wins")
}

func TestBadConfigzKeepsTheDefaults(t *testing.T) {
	for name, body := range map[string]string{
		"not JSON":       "<html>",
		"no section":     `{"machine-controller-manager":{}}`,
		"wrong shape":    `{"machina-manager":["a"]}`,
		"bad duration":   `{"machina-manager":{"machine-creation-timeout":"1m","machine-health-timeout":"soon"}}`,
		"negative shape": `[]`,
	} {
		t.Run(name, func(t *testing.T) {
			fs, tf := whyFlags(t)
			want := *tf
			values, err := parseConfigz([]byte(body))
			if err == nil {
				err = tf.applyConfigz(values, fs)
			}
			require.Error(t, err)
			assert.Equal(t, want, *tf, "nothing is applied from a bad document")
		})
	}
}
