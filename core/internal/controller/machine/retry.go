package machine

import (
	"time"

	"google.golang.org/grpc/codes"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// This file is the controller's reading of the Driver API's error tables
// (docs/driver-api.md §6 and §7): for every driver call the controller makes,
// what each gRPC code leads to. It is data, so that the tables in the
// specification, in docs/machine-lifecycle.md and here can be compared
// line by line; retry_test.go checks every row.

// retryClass names one of the retry periods of the Driver API (§7.3).
type retryClass int

const (
	// retryShort: the call may succeed if repeated soon (5s).
	retryShort retryClass = iota + 1
	// retryMedium: someone has to fix something; look again in 3m.
	retryMedium
	// retryLong: an operator or a new driver is needed (10m).
	retryLong
	// retryResourceExhausted: no capacity or quota
	// (--resource-exhausted-retry, 10m).
	retryResourceExhausted
)

// String names the class for documentation and test output.
func (c retryClass) String() string {
	switch c {
	case retryShort:
		return "short"
	case retryMedium:
		return "medium"
	case retryLong:
		return "long"
	case retryResourceExhausted:
		return "resource-exhausted"
	}
	return "none"
}

// after is the duration of a retry class under the controller's options.
func (o Options) after(c retryClass) time.Duration {
	switch c {
	case retryShort:
		return o.ShortRetry
	case retryMedium:
		return o.MediumRetry
	case retryLong:
		return o.LongRetry
	case retryResourceExhausted:
		return o.ResourceExhaustedRetry
	}
	return o.ShortRetry
}

// reaction is what the controller does after a driver call ended with a
// code.
type reaction struct {
	// proceed: the code is an answer, not a failure; the flow goes on (for
	// example NOT_FOUND from GetMachineStatus, or from DeleteMachine).
	proceed bool
	// warn: the flow goes on despite a failure, which is reported in a
	// Warning event (a failed node lookup must not block a deletion).
	warn bool
	// retry is the period after which the failed step runs again.
	retry retryClass
	// brokenDriver marks UNIMPLEMENTED from an RPC the driver must serve:
	// the driver contradicts its own capabilities and only a new driver
	// helps.
	brokenDriver bool
}

// callTable is the reaction table of one driver call in one flow.
type callTable struct {
	// rpc and flow name the table, for messages and tests.
	rpc  string
	flow v1alpha1.MachineOperationType
	// codes holds the rows; otherwise is the reaction to any code not
	// listed (INTERNAL, OUT_OF_RANGE, DATA_LOSS, ...).
	codes     map[codes.Code]reaction
	otherwise reaction
}

// react returns the reaction to code. OK always proceeds.
func (t callTable) react(code codes.Code) reaction {
	if code == codes.OK {
		return reaction{proceed: true}
	}
	if r, ok := t.codes[code]; ok {
		return r
	}
	return t.otherwise
}

// transientShort are the codes after which a call may succeed if repeated
// soon: the driver was unreachable or slow, busy with the same machine, or
// failed in a way it could not classify. CANCELLED only happens when the
// core itself gave up on the call (shutdown, lost leadership).
var transientShort = map[codes.Code]reaction{
	codes.Unavailable:      {retry: retryShort},
	codes.DeadlineExceeded: {retry: retryShort},
	codes.Aborted:          {retry: retryShort},
	codes.Unknown:          {retry: retryShort},
	codes.Canceled:         {retry: retryShort},
}

func withRows(base map[codes.Code]reaction, rows map[codes.Code]reaction) map[codes.Code]reaction {
	out := make(map[codes.Code]reaction, len(base)+len(rows))
	for c, r := range base {
		out[c] = r
	}
	for c, r := range rows {
		out[c] = r
	}
	return out
}

// The tables. A creation failure sets the phase CrashLoopBackOff (Failed once
// the creation timeout has passed) and lastOperation {Create, Failed}; a
// deletion failure keeps the machine at its deletion step with lastOperation
// {Delete, Failed}.
var (
	// createMachineTable: §6.1.4.
	createMachineTable = callTable{
		rpc: "CreateMachine", flow: v1alpha1.MachineOperationCreate,
		codes: withRows(transientShort, map[codes.Code]reaction{
			codes.ResourceExhausted: {retry: retryResourceExhausted},
			codes.Unimplemented:     {retry: retryLong, brokenDriver: true},
		}),
		otherwise: reaction{retry: retryMedium},
	}
	// initializeMachineTable: §6.2.4 and §12.
	initializeMachineTable = callTable{
		rpc: "InitializeMachine", flow: v1alpha1.MachineOperationCreate,
		codes: withRows(transientShort, map[codes.Code]reaction{
			codes.ResourceExhausted: {retry: retryResourceExhausted},
			codes.Unimplemented:     {retry: retryLong, brokenDriver: true},
		}),
		otherwise: reaction{retry: retryMedium},
	}
	// statusForCreateTable: §6.4.4, column Creation. NOT_FOUND is the
	// answer "no VM": the flow creates one (or, with a provider ID, waits).
	statusForCreateTable = callTable{
		rpc: "GetMachineStatus", flow: v1alpha1.MachineOperationCreate,
		codes: withRows(transientShort, map[codes.Code]reaction{
			codes.NotFound:      {proceed: true},
			codes.Unimplemented: {retry: retryLong, brokenDriver: true},
		}),
		otherwise: reaction{retry: retryMedium},
	}
	// statusForDeleteTable: §6.4.4, column Deletion. The lookup only wants
	// the node name: a transient failure is retried, a broken driver waits
	// for a new one, and any other failure goes on without a node name
	// (there is no known Node to drain; DeleteMachine removes the VM).
	statusForDeleteTable = callTable{
		rpc: "GetMachineStatus", flow: v1alpha1.MachineOperationDelete,
		codes: withRows(transientShort, map[codes.Code]reaction{
			codes.NotFound:      {proceed: true},
			codes.Unimplemented: {retry: retryLong, brokenDriver: true},
		}),
		otherwise: reaction{proceed: true, warn: true},
	}
	// statusForHealthTable: §6.4.4, column Health check (the VM check
	// without a target cluster, §11.5). OK and NOT_FOUND are the answers
	// "the VM is there" and "the VM is gone"; after any failure nothing is
	// known about the VM and the check runs again after the period.
	statusForHealthTable = callTable{
		rpc: "GetMachineStatus", flow: v1alpha1.MachineOperationHealthCheck,
		codes: withRows(transientShort, map[codes.Code]reaction{
			codes.NotFound:      {proceed: true},
			codes.Unimplemented: {retry: retryLong, brokenDriver: true},
		}),
		otherwise: reaction{retry: retryMedium},
	}
	// deleteMachineTable: §6.3.4. NOT_FOUND is tolerated as OK.
	deleteMachineTable = callTable{
		rpc: "DeleteMachine", flow: v1alpha1.MachineOperationDelete,
		codes: withRows(transientShort, map[codes.Code]reaction{
			codes.NotFound:      {proceed: true},
			codes.Unimplemented: {retry: retryLong, brokenDriver: true},
		}),
		otherwise: reaction{retry: retryLong},
	}
)

// errorCodeName is how a code is written to lastOperation.errorCode: the
// grpc-go and MCM spelling ("ResourceExhausted"), which cluster-autoscaler
// compares against.
func errorCodeName(c codes.Code) string {
	return c.String()
}
