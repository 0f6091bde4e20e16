package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRunExitCodes(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.Equal(t, 0, run([]string{"--version"}, &out, &errOut))
	assert.Equal(t, "machina-manager dev\n", out.String())

	out.Reset()
	errOut.Reset()
	assert.Equal(t, 0, run([]string{"-h"}, &out, &errOut))
	assert.True(t, strings.Contains(errOut.String(), "-machine-creation-timeout duration"), "usage lacks a flag")

	errOut.Reset()
	assert.Equal(t, 2, run([]string{"--no-such-flag"}, &out, &errOut))
	assert.Contains(t, errOut.String(), "no-such-flag")

	errOut.Reset()
	assert.Equal(t, 2, run([]string{"stray"}, &out, &errOut))
	assert.Contains(t, errOut.String(), `unexpected arguments: ["stray"]`)

	// Options New rejects: exit 1, with the reason in the log.
	errOut.Reset()
	assert.Equal(t, 1, run([]string{"--namespace=", "--control-kubeconfig=/nonexistent"}, &out, &errOut))
	assert.Contains(t, errOut.String(), "--namespace")
}

func TestParseFlags(t *testing.T) {
	var out bytes.Buffer
	c, err := parseFlags([]string{"--v=3", "--machine-drain-timeout=30m", "--zap-encoder=console"}, &out)
	require.NoError(t, err)
	assert.True(t, c.vSet)
	assert.Equal(t, 3, c.verbosity)
	assert.Equal(t, 30*time.Minute, c.opts.MachineDrainTimeout)
	log := c.logger(&out)
	assert.True(t, log.V(3).Enabled(), "--v=3 enables V(3)")
	assert.False(t, log.V(4).Enabled())

	c, err = parseFlags(nil, &out)
	require.NoError(t, err)
	assert.False(t, c.vSet)
	assert.True(t, c.logger(&out).V(0).Enabled())
	assert.False(t, c.logger(&out).V(1).Enabled(), "info level by default")

	_, err = parseFlags([]string{"--v=-1"}, &out)
	require.ErrorContains(t, err, "--v must be between 0 and 127")

	// --zap-log-level still works without --v.
	c, err = parseFlags([]string{"--zap-log-level=2"}, &out)
	require.NoError(t, err)
	assert.True(t, c.logger(&out).V(2).Enabled())
	assert.False(t, c.logger(&out).V(3).Enabled())
}
