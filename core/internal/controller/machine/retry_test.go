package machine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc/codes"
)

// The rows of the Driver API's error tables (docs/driver-api.md §6.1.4,
// §6.2.4, §6.3.4, §6.4.4, §7.2), one by one: the table in retry.go must
// say the same.
func TestReactionTables(t *testing.T) {
	proceed := reaction{proceed: true}
	short := reaction{retry: retryShort}
	medium := reaction{retry: retryMedium}
	long := reaction{retry: retryLong}
	exhausted := reaction{retry: retryResourceExhausted}
	broken := reaction{retry: retryLong, brokenDriver: true}
	goOnWarning := reaction{proceed: true, warn: true}

	rows := []struct {
		table callTable
		code  codes.Code
		want  reaction
	}{
		// CreateMachine, §6.1.4.
		{createMachineTable, codes.OK, proceed},
		{createMachineTable, codes.InvalidArgument, medium},
		{createMachineTable, codes.AlreadyExists, medium},
		{createMachineTable, codes.ResourceExhausted, exhausted},
		{createMachineTable, codes.Unauthenticated, medium},
		{createMachineTable, codes.PermissionDenied, medium},
		{createMachineTable, codes.FailedPrecondition, medium},
		{createMachineTable, codes.Aborted, short},
		{createMachineTable, codes.Unavailable, short},
		{createMachineTable, codes.DeadlineExceeded, short},
		{createMachineTable, codes.Internal, medium},
		{createMachineTable, codes.Unknown, short},
		{createMachineTable, codes.Canceled, short},
		{createMachineTable, codes.Unimplemented, broken},
		{createMachineTable, codes.NotFound, medium},
		{createMachineTable, codes.OutOfRange, medium},
		{createMachineTable, codes.DataLoss, medium},

		// InitializeMachine, §6.2.4 and §12.
		{initializeMachineTable, codes.OK, proceed},
		{initializeMachineTable, codes.InvalidArgument, medium},
		{initializeMachineTable, codes.NotFound, medium},
		{initializeMachineTable, codes.Unavailable, short},
		{initializeMachineTable, codes.ResourceExhausted, exhausted},
		{initializeMachineTable, codes.Unauthenticated, medium},
		{initializeMachineTable, codes.PermissionDenied, medium},
		{initializeMachineTable, codes.FailedPrecondition, medium},
		{initializeMachineTable, codes.Aborted, short},
		{initializeMachineTable, codes.DeadlineExceeded, short},
		{initializeMachineTable, codes.Internal, medium},
		{initializeMachineTable, codes.Unknown, short},
		{initializeMachineTable, codes.Unimplemented, broken},

		// GetMachineStatus in the creation flow, §6.4.4.
		{statusForCreateTable, codes.OK, proceed},
		{statusForCreateTable, codes.NotFound, proceed},
		{statusForCreateTable, codes.FailedPrecondition, medium},
		{statusForCreateTable, codes.InvalidArgument, medium},
		{statusForCreateTable, codes.Unauthenticated, medium},
		{statusForCreateTable, codes.PermissionDenied, medium},
		{statusForCreateTable, codes.Aborted, short},
		{statusForCreateTable, codes.Unavailable, short},
		{statusForCreateTable, codes.DeadlineExceeded, short},
		{statusForCreateTable, codes.Internal, medium},
		{statusForCreateTable, codes.Unknown, short},
		{statusForCreateTable, codes.Unimplemented, broken},

		// GetMachineStatus in the deletion flow, §6.4.4.
		{statusForDeleteTable, codes.OK, proceed},
		{statusForDeleteTable, codes.NotFound, proceed},
		{statusForDeleteTable, codes.FailedPrecondition, goOnWarning},
		{statusForDeleteTable, codes.InvalidArgument, goOnWarning},
		{statusForDeleteTable, codes.Unauthenticated, goOnWarning},
		{statusForDeleteTable, codes.PermissionDenied, goOnWarning},
		{statusForDeleteTable, codes.Aborted, short},
		{statusForDeleteTable, codes.Unavailable, short},
		{statusForDeleteTable, codes.DeadlineExceeded, short},
		{statusForDeleteTable, codes.Internal, goOnWarning},
		{statusForDeleteTable, codes.Unknown, short},
		{statusForDeleteTable, codes.Unimplemented, broken},

		// GetMachineStatus in the VM check without a target cluster,
		// §6.4.4 and §11.5: only OK and NOT_FOUND are answers.
		{statusForHealthTable, codes.OK, proceed},
		{statusForHealthTable, codes.NotFound, proceed},
		{statusForHealthTable, codes.FailedPrecondition, medium},
		{statusForHealthTable, codes.InvalidArgument, medium},
		{statusForHealthTable, codes.Unauthenticated, medium},
		{statusForHealthTable, codes.PermissionDenied, medium},
		{statusForHealthTable, codes.Aborted, short},
		{statusForHealthTable, codes.Unavailable, short},
		{statusForHealthTable, codes.DeadlineExceeded, short},
		{statusForHealthTable, codes.Internal, medium},
		{statusForHealthTable, codes.Unknown, short},
		{statusForHealthTable, codes.Unimplemented, broken},

		// DeleteMachine, §6.3.4.
		{deleteMachineTable, codes.OK, proceed},
		{deleteMachineTable, codes.NotFound, proceed},
		{deleteMachineTable, codes.InvalidArgument, long},
		{deleteMachineTable, codes.Unauthenticated, long},
		{deleteMachineTable, codes.PermissionDenied, long},
		{deleteMachineTable, codes.FailedPrecondition, long},
		{deleteMachineTable, codes.ResourceExhausted, long},
		{deleteMachineTable, codes.Aborted, short},
		{deleteMachineTable, codes.Unavailable, short},
		{deleteMachineTable, codes.DeadlineExceeded, short},
		{deleteMachineTable, codes.Internal, long},
		{deleteMachineTable, codes.Unknown, short},
		{deleteMachineTable, codes.Unimplemented, broken},
	}
	for _, row := range rows {
		got := row.table.react(row.code)
		assert.Equal(t, row.want, got, "%s (%s flow), code %s", row.table.rpc, row.table.flow, row.code)
	}
}

func TestRetryPeriods(t *testing.T) {
	o := Options{}.withDefaults()
	assert.Equal(t, 5*time.Second, o.after(retryShort))
	assert.Equal(t, 3*time.Minute, o.after(retryMedium))
	assert.Equal(t, 10*time.Minute, o.after(retryLong))
	assert.Equal(t, 10*time.Minute, o.after(retryResourceExhausted))

	o = Options{ShortRetry: time.Second, MediumRetry: 2 * time.Second, LongRetry: 3 * time.Second, ResourceExhaustedRetry: 4 * time.Second}.withDefaults()
	assert.Equal(t, time.Second, o.after(retryShort))
	assert.Equal(t, 2*time.Second, o.after(retryMedium))
	assert.Equal(t, 3*time.Second, o.after(retryLong))
	assert.Equal(t, 4*time.Second, o.after(retryResourceExhausted))
}

// lastOperation.errorCode uses the MCM / grpc-go spelling that
// cluster-autoscaler compares against.
func TestErrorCodeNames(t *testing.T) {
	for code, want := range map[codes.Code]string{
		codes.ResourceExhausted: "ResourceExhausted",
		codes.Unavailable:       "Unavailable",
		codes.DeadlineExceeded:  "DeadlineExceeded",
		codes.InvalidArgument:   "InvalidArgument",
		codes.Internal:          "Internal",
		codes.Unimplemented:     "Unimplemented",
		codes.Canceled:          "Canceled",
	} {
		assert.Equal(t, want, errorCodeName(code))
	}
}
