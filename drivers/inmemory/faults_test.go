package inmemory

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// statusCodes calls GetMachineStatus n times for an existing machine and
// returns the code of each call.
func statusCodes(t *testing.T, d *Driver, n int) []codes.Code {
	t.Helper()
	ctx := context.Background()
	out := make([]codes.Code, n)
	for i := range out {
		_, err := d.GetMachineStatus(ctx, statusReq(machine("m1")))
		out[i] = status.Code(err)
	}
	return out
}

func withMachine(t *testing.T, opts Options) *Driver {
	t.Helper()
	d := New(opts)
	_, err := d.CreateMachine(context.Background(), createReq("m1", "small", "{}"))
	require.NoError(t, err)
	return d
}

func TestFaultCodeAndCount(t *testing.T) {
	d := withMachine(t, Options{})
	d.SetFault(MethodGetMachineStatus, Fault{Code: codes.Unavailable, Count: 2})
	assert.Equal(t, []codes.Code{codes.Unavailable, codes.Unavailable, codes.OK, codes.OK}, statusCodes(t, d, 4))

	d.SetFault(MethodGetMachineStatus, Fault{Code: codes.Internal, Message: "boom"})
	_, err := d.GetMachineStatus(context.Background(), statusReq(machine("m1")))
	requireCode(t, codes.Internal, err)
	assert.Equal(t, "boom", status.Convert(err).Message())

	d.ClearFaults()
	assert.Equal(t, []codes.Code{codes.OK}, statusCodes(t, d, 1))
	assert.Equal(t, 6, d.Calls(MethodGetMachineStatus))
}

func TestFaultEveryNth(t *testing.T) {
	d := withMachine(t, Options{})
	d.SetFault(MethodGetMachineStatus, Fault{Code: codes.Aborted, Every: 3})
	u, a := codes.OK, codes.Aborted
	assert.Equal(t, []codes.Code{u, u, a, u, u, a, u}, statusCodes(t, d, 7))
}

func TestFaultRateIsDeterministicPerSeed(t *testing.T) {
	run := func(seed uint64) []codes.Code {
		d := withMachine(t, Options{})
		d.SetFault(MethodGetMachineStatus, Fault{Code: codes.Unavailable, Rate: 0.3, Seed: seed})
		return statusCodes(t, d, 400)
	}
	first, again, other := run(7), run(7), run(8)
	assert.Equal(t, first, again, "the same seed must give the same sequence")
	assert.NotEqual(t, first, other, "another seed should give another sequence")

	failed := 0
	for _, c := range first {
		if c == codes.Unavailable {
			failed++
		}
	}
	// 400 draws at p=0.3: the mean is 120, the standard deviation about 9.
	assert.InDelta(t, 120, failed, 45)
}

func TestFaultLatencyHonoursTheDeadline(t *testing.T) {
	d := withMachine(t, Options{})
	d.SetFault(MethodGetMachineStatus, Fault{Latency: time.Hour})

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := d.GetMachineStatus(ctx, statusReq(machine("m1")))
	requireCode(t, codes.DeadlineExceeded, err)

	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	_, err = d.GetMachineStatus(ctx, statusReq(machine("m1")))
	requireCode(t, codes.Canceled, err)

	// A latency shorter than the deadline delays a successful call.
	d.SetFault(MethodGetMachineStatus, Fault{Latency: 30 * time.Millisecond})
	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	_, err = d.GetMachineStatus(ctx, statusReq(machine("m1")))
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(start), 30*time.Millisecond)
}

func TestFaultAfterEffectLosesTheAnswerButNotTheVM(t *testing.T) {
	d := New(Options{})
	ctx := context.Background()
	d.SetFault(MethodCreateMachine, Fault{Code: codes.DeadlineExceeded, After: true, Count: 1})
	_, err := d.CreateMachine(ctx, createReq("m1", "small", "{}"))
	requireCode(t, codes.DeadlineExceeded, err)
	require.Len(t, d.VMs(), 1, "the VM exists although the caller saw an error")

	resp, err := d.CreateMachine(ctx, createReq("m1", "small", "{}"))
	require.NoError(t, err)
	assert.Equal(t, d.VMs()[0].ProviderID, resp.GetProviderId())
	assert.Len(t, d.VMs(), 1, "the retry must not create a second VM")
}

func TestFaultBeforeEffectCreatesNothing(t *testing.T) {
	d := New(Options{})
	d.SetFault(MethodCreateMachine, Fault{Code: codes.ResourceExhausted})
	_, err := d.CreateMachine(context.Background(), createReq("m1", "small", "{}"))
	requireCode(t, codes.ResourceExhausted, err)
	assert.Empty(t, d.VMs())
}

func TestAnyMethodFault(t *testing.T) {
	d := withMachine(t, Options{})
	d.SetFault(AnyMethod, Fault{Code: codes.Unavailable})
	d.SetFault(MethodDeleteMachine, Fault{Code: codes.Internal})
	_, err := d.GetMachineStatus(context.Background(), statusReq(machine("m1")))
	requireCode(t, codes.Unavailable, err)
	_, err = d.DeleteMachine(context.Background(), deleteReq(machine("m1")))
	requireCode(t, codes.Internal, err)
	_, err = d.Probe(context.Background())
	requireCode(t, codes.Unavailable, err)
}

func TestSetFaultPanicsOnMisuse(t *testing.T) {
	d := New(Options{})
	assert.Panics(t, func() { d.SetFault("CreateVolume", Fault{}) })
	assert.Panics(t, func() { d.SetFault(MethodCreateMachine, Fault{Rate: 2}) })
	_, err := Open(Options{Faults: map[string]Fault{MethodCreateMachine: {Count: -1}}})
	require.Error(t, err)
}

func TestSecondCallForABusyMachineIsAborted(t *testing.T) {
	d := New(Options{})
	d.SetFault(MethodCreateMachine, Fault{Latency: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := d.CreateMachine(ctx, createReq("m1", "small", "{}"))
		done <- err
	}()
	require.Eventually(t, func() bool { return d.Calls(MethodCreateMachine) == 1 }, 10*time.Second, time.Millisecond)

	_, err := d.GetMachineStatus(context.Background(), statusReq(machine("m1")))
	requireCode(t, codes.Aborted, err)
	// Other machines are not blocked.
	_, err = d.GetMachineStatus(context.Background(), statusReq(machine("m2")))
	requireCode(t, codes.NotFound, err)

	cancel()
	requireCode(t, codes.Canceled, <-done)
	_, err = d.GetMachineStatus(context.Background(), statusReq(machine("m1")))
	requireCode(t, codes.NotFound, err)
}

func TestCrashAfterInProcess(t *testing.T) {
	var crashes atomic.Int32
	d := New(Options{CrashAfter: 2, Crash: func() { crashes.Add(1) }})
	ctx := context.Background()
	_, err := d.CreateMachine(ctx, createReq("m1", "small", "{}"))
	require.NoError(t, err)
	ready, err := d.Probe(ctx) // identity calls do not count
	require.NoError(t, err)
	assert.True(t, ready)
	_, err = d.GetMachineStatus(ctx, statusReq(machine("m1")))
	require.NoError(t, err)
	assert.Zero(t, crashes.Load())

	_, err = d.GetMachineStatus(ctx, statusReq(machine("m1")))
	requireCode(t, codes.Unavailable, err)
	assert.Equal(t, int32(1), crashes.Load())
}

func TestProbeReadiness(t *testing.T) {
	d := New(Options{})
	ready, err := d.Probe(context.Background())
	require.NoError(t, err)
	assert.True(t, ready)
	d.SetReady(false)
	ready, err = d.Probe(context.Background())
	require.NoError(t, err)
	assert.False(t, ready)
}
