package main

import (
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/machina-io/machina/cmd/machina-node-agent/internal/hostexec"
)

// TestChrootFlag: --chroot makes the agent start the host's programs inside
// --root (the DaemonSet's way, internal/hostexec runs them there); without
// it they are the agent's own.
func TestChrootFlag(t *testing.T) {
	base := []string{"--node-name=n1", "--root=/host", "--source-dir=/s", "--state-dir=/st"}
	cfg, err := parseFlags(append(base, "--chroot"), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, hostexec.Runner{Root: "/host"}, cfg.host())

	cfg, err = parseFlags(base, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, hostexec.Runner{}, cfg.host())
}
