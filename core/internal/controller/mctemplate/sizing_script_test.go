package mctemplate

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNodeSizingScript runs the template's dynamic-system-reserved-calc.sh
// with bash, as kubelet-auto-node-size.service does, on a made-up
// capacity.
func TestNodeSizingScript(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	script := filepath.Join(t.TempDir(), "calc.sh")
	data, err := templateFS.ReadFile("templates/dynamic-system-reserved-calc.sh")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(script, data, 0o755))

	run := func(memKiB, cpus string, args ...string) string {
		out := filepath.Join(t.TempDir(), "node-sizing.env")
		cmd := exec.Command(bash, append([]string{script}, args...)...)
		cmd.Env = append(os.Environ(), "NODE_SIZING_ENV="+out, "TOTAL_MEMORY_KIB="+memKiB, "TOTAL_CPUS="+cpus)
		msg, err := cmd.CombinedOutput()
		require.NoError(t, err, string(msg))
		got, err := os.ReadFile(out)
		require.NoError(t, err)
		return string(got)
	}
	// 16 GiB: 25% of 4 GiB + 20% of 4 GiB + 10% of 8 GiB = 1024 + 819 + 819
	// MiB. 8 CPUs: 60 + 10 + 5 + 5 + 4 × 2.5 millicores.
	assert.Equal(t, "SYSTEM_RESERVED_MEMORY=2662Mi\nSYSTEM_RESERVED_CPU=90m\nSYSTEM_RESERVED_ES=1Gi\n",
		run("16777216", "8", "true", "1Gi", "500m", "1Gi"))
	// 256 GiB: ... + 6% of 112 GiB + 2% of 128 GiB. 1 CPU: 60 millicores.
	assert.Equal(t, "SYSTEM_RESERVED_MEMORY=12164Mi\nSYSTEM_RESERVED_CPU=60m\nSYSTEM_RESERVED_ES=2Gi\n",
		run("268435456", "1", "true", "1Gi", "500m", "2Gi"))
	// Disabled: the given values.
	assert.Equal(t, "SYSTEM_RESERVED_MEMORY=3Gi\nSYSTEM_RESERVED_CPU=250m\nSYSTEM_RESERVED_ES=1Gi\n",
		run("16777216", "8", "false", "3Gi", "250m", "1Gi"))
}
