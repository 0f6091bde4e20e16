package inmemory

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
)

func TestParseFaults(t *testing.T) {
	got, err := ParseFaults(" CreateMachine:code=RESOURCE_EXHAUSTED,count=2 ; GetMachineStatus:latency=1.5s,code=unavailable,rate=0.25,seed=9;" +
		"DeleteMachine:code=14,every=3,after,message=gone fishing;*:latency=10ms;ListMachines:code=Internal,after=false")
	require.NoError(t, err)
	assert.Equal(t, map[string]Fault{
		MethodCreateMachine:    {Code: codes.ResourceExhausted, Count: 2},
		MethodGetMachineStatus: {Code: codes.Unavailable, Latency: 1500 * time.Millisecond, Rate: 0.25, Seed: 9},
		MethodDeleteMachine:    {Code: codes.Unavailable, Every: 3, After: true, Message: "gone fishing"},
		AnyMethod:              {Latency: 10 * time.Millisecond},
		MethodListMachines:     {Code: codes.Internal},
	}, got)

	empty, err := ParseFaults("  ;; ")
	require.NoError(t, err)
	assert.Empty(t, empty)
}

func TestParseFaultsRejectsBadInput(t *testing.T) {
	for _, in := range []string{
		"CreateMachine",                    // no fields
		"CreateVolume:code=INTERNAL",       // unknown method
		"CreateMachine:code=EXPLODED",      // unknown code
		"CreateMachine:code=17",            // not a gRPC code
		"CreateMachine:rate=1.5",           // out of range
		"CreateMachine:rate=NaN",           // not a probability (fired on every call)
		"CreateMachine:rate=nan",           // ParseFloat takes any case
		"CreateMachine:rate=+Inf",          // out of range
		"CreateMachine:rate=-inf",          // out of range
		"CreateMachine:rate=-0.1",          // negative
		"CreateMachine:rate=1e309",         // overflows to +Inf
		"CreateMachine:rate=often",         // not a number
		"CreateMachine:count=-1",           // negative
		"CreateMachine:latency=forever",    // not a duration
		"CreateMachine:colour=blue",        // unknown key
		"CreateMachine:code",               // no value
		"CreateMachine:after=perhaps",      // not a bool
		"CreateMachine:code=INTERNAL;Oops", // second entry broken
	} {
		_, err := ParseFaults(in)
		assert.Error(t, err, in)
	}
}

func TestParseCode(t *testing.T) {
	for in, want := range map[string]codes.Code{
		"OK": codes.OK, "unavailable": codes.Unavailable, "RESOURCE_EXHAUSTED": codes.ResourceExhausted,
		"ResourceExhausted": codes.ResourceExhausted, "CANCELLED": codes.Canceled, "Canceled": codes.Canceled,
		"DEADLINE_EXCEEDED": codes.DeadlineExceeded, "4": codes.DeadlineExceeded, "16": codes.Unauthenticated,
	} {
		got, err := ParseCode(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
}

func TestParseCapabilities(t *testing.T) {
	got, err := ParseCapabilities("initialize, list,,volumes,list")
	require.NoError(t, err)
	assert.Len(t, got, 3)
	_, err = ParseCapabilities("initialize,teleport")
	require.Error(t, err)
}
