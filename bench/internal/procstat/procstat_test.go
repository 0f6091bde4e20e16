package procstat

import (
	"os"
	"os/exec"
	"runtime/debug"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// burn keeps a CPU busy until this process has used d more CPU time, as
// getrusage(2) counts it: on a loaded machine wall time says little about
// CPU time.
func burn(t *testing.T, d time.Duration) {
	t.Helper()
	start := rusageCPU(t)
	deadline := time.Now().Add(time.Minute)
	for rusageCPU(t)-start < d {
		if time.Now().After(deadline) {
			t.Fatalf("could not use %s of CPU within a minute", d)
		}
		for i := 0; i < 1_000_000; i++ {
			_ = i * i
		}
	}
}

func rusageCPU(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	require.NoError(t, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestReadSeesCPUAndMemoryOfThisProcess(t *testing.T) {
	before, err := Read(os.Getpid())
	require.NoError(t, err)
	burn(t, 300*time.Millisecond)
	// Touch 64 MiB so that the resident size grows by about that much.
	block := make([]byte, 64<<20)
	for i := 0; i < len(block); i += 4096 {
		block[i] = 1
	}
	after, err := Read(os.Getpid())
	require.NoError(t, err)

	assert.GreaterOrEqual(t, after.CPU-before.CPU, 280*time.Millisecond, "300ms of CPU by getrusage, less the 10ms tick of /proc")
	assert.GreaterOrEqual(t, after.RSS, before.RSS+60<<20)
	assert.GreaterOrEqual(t, after.PeakRSS, after.RSS)
	_ = block[len(block)-1]
}

func TestResetPeakForgetsAnEarlierPeak(t *testing.T) {
	block := make([]byte, 128<<20)
	for i := 0; i < len(block); i += 4096 {
		block[i] = 1
	}
	_ = block[len(block)-1]
	peak, err := Read(os.Getpid())
	require.NoError(t, err)
	// block is dead from here on (no later use keeps it alive): give its
	// memory back to the kernel, then reset the peak.
	for range 3 {
		debug.FreeOSMemory()
	}
	require.NoError(t, ResetPeak(os.Getpid()))
	after, err := Read(os.Getpid())
	require.NoError(t, err)
	assert.Less(t, after.PeakRSS, peak.PeakRSS-64<<20, "the peak after the reset is the current size, below the earlier peak")
}

func TestChildFindsAChildByCommandName(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	pid, err := Child(os.Getpid(), "sleep")
	require.NoError(t, err)
	assert.Equal(t, cmd.Process.Pid, pid)

	_, err = Child(os.Getpid(), "no-such-command")
	assert.Error(t, err)
}

func TestStatFieldsSkipsACommandNameWithSpacesAndParentheses(t *testing.T) {
	fields, err := statFields([]byte("42 (a b) c)) S 7 42 42 0 -1 4194560 100 0 0 0 250 30 0 0 20 0 1 0 100 1000 10"))
	require.NoError(t, err)
	assert.Equal(t, "S", fields[0])
	assert.Equal(t, "7", fields[1], "field 4 is the parent's process ID")
	assert.Equal(t, "250", fields[14-3], "utime")
	assert.Equal(t, "30", fields[15-3], "stime")
}

func TestHostUtilisation(t *testing.T) {
	before, err := ReadHost()
	require.NoError(t, err)
	burn(t, 300*time.Millisecond)
	after, err := ReadHost()
	require.NoError(t, err)
	u := Utilisation(before, after)
	assert.Greater(t, u, 0.0)
	assert.LessOrEqual(t, u, 1.0)
	assert.Zero(t, Utilisation(after, after))
}

func TestLoadAverage(t *testing.T) {
	l, err := LoadAverage()
	require.NoError(t, err)
	assert.GreaterOrEqual(t, l, 0.0)
}
