package conformance

import (
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// rule is one MUST of the Driver API: the section that states it and a
// short statement. Every failure message starts with a rule, so a reader
// knows what is broken and where to read about it.
type rule struct {
	section string
	text    string
}

func (r rule) String() string { return r.section + " " + r.text }

// errorf fails t with the rule and the details.
func (r rule) errorf(t T, format string, args ...any) {
	t.Helper()
	t.Errorf("%s: %s", r, fmt.Sprintf(format, args...))
}

// fatalf fails t with the rule and ends the test.
func (r rule) fatalf(t T, format string, args ...any) {
	t.Helper()
	t.Fatalf("%s: %s", r, fmt.Sprintf(format, args...))
}

// The rules the suite checks, by section of docs/driver-api.md.
var (
	ruleSocketMode   = rule{"§2.2", "the socket file has mode 0600 (no access for group and others)"}
	ruleSocketPath   = rule{"§2.2", "the socket path is at most 107 bytes"}
	ruleConnections  = rule{"§2.6", "a driver accepts several connections and ties no state to one"}
	ruleStableAnswer = rule{"§2.7", "GetPluginInfo and GetPluginCapabilities answer the same for the life of the process"}

	ruleVersionServed      = rule{"§3.1", "the driver serves machina.driver.v1alpha1"}
	ruleKnownCapabilities  = rule{"§3.4", "capabilities are Capability.Type values of v1alpha1 (never TYPE_UNSPECIFIED)"}
	ruleUnadvertisedUnimpl = rule{"§3.5", "an OPTIONAL RPC whose capability is not advertised answers UNIMPLEMENTED"}
	ruleAdvertisedImpl     = rule{"§3.5", "an OPTIONAL RPC whose capability is advertised is implemented"}

	ruleRequiredFields = rule{"§4.1", "a missing or malformed REQUIRED field answers INVALID_ARGUMENT naming the field path"}
	ruleLastKnownState = rule{"§4.7", "last_known_state is accepted back and the driver does not depend on it"}

	rulePluginName    = rule{"§5.1.2", "GetPluginInfo.name is at most 63 characters of [a-z0-9.-], starting and ending with an alphanumeric"}
	ruleVendorVersion = rule{"§5.1.2", "GetPluginInfo.vendor_version is a semantic version of at most 128 bytes, optionally with a leading v"}
	ruleManifest      = rule{"§5.1.2", "GetPluginInfo.manifest has at most 16 entries of at most 128 bytes each"}
	ruleProbe         = rule{"§5.3", "Probe answers OK within 5 seconds"}
	ruleIdentityOK    = rule{"§5", "the identity RPCs answer OK"}

	ruleCreateOK           = rule{"§6.1.3", "CreateMachine of a new machine answers OK"}
	ruleCreateResponse     = rule{"§6.1.2", "CreateMachine returns a provider ID and a node name within their limits"}
	ruleCreateIdempotent   = rule{"§6.1.3", "CreateMachine is idempotent on machine.name"}
	ruleCreateOneVM        = rule{"§6.1.3", "repeated CreateMachine calls leave exactly one VM"}
	ruleCreateIncompatible = rule{"§6.1.3", "CreateMachine with an incompatible provider_spec for an existing VM answers ALREADY_EXISTS and keeps the VM"}

	ruleInitialize = rule{"§6.2.3", "InitializeMachine completes the set-up of the VM with machine.provider_id, idempotently"}
	ruleInitNotFnd = rule{"§6.2.4", "InitializeMachine of a VM that does not exist answers NOT_FOUND"}

	ruleDeleteOK         = rule{"§6.3.3", "DeleteMachine of an existing VM answers OK"}
	ruleDeleteRemoves    = rule{"§6.3.3", "after DeleteMachine answered OK the VM is gone"}
	ruleDeleteIdempotent = rule{"§6.3.3", "DeleteMachine of a VM that is gone answers OK"}
	ruleDeleteUnknown    = rule{"§6.3.3", "DeleteMachine of a machine that never existed answers OK"}
	ruleDeleteByName     = rule{"§6.3.3", "DeleteMachine without provider_id deletes the VM found by machine.name"}
	ruleDeleteOnlyID     = rule{"§6.3.3", "DeleteMachine with a provider_id deletes only the VM with that provider ID"}
	ruleRecreate         = rule{"§6.3.3", "CreateMachine after DeleteMachine answered OK creates a new VM"}

	ruleStatusMatches    = rule{"§6.4.3", "GetMachineStatus of a created machine returns what CreateMachine returned"}
	ruleStatusUnknown    = rule{"§6.4.3", "GetMachineStatus of an unknown machine answers NOT_FOUND"}
	ruleStatusProviderID = rule{"§6.4.3", "GetMachineStatus with a provider_id the VM does not have answers NOT_FOUND"}
	ruleNeedsInit        = rule{"§6.4.2", "needs_initialization is only set by drivers with TYPE_INITIALIZE_MACHINE"}

	ruleListContains = rule{"§6.5.3", "ListMachines lists every VM the driver created for the class, once each"}
	ruleListScope    = rule{"§6.5.3", "ListMachines lists only VMs of the class with this machine_class.namespace and machine_class.name"}
	ruleListResponse = rule{"§6.5.2", "ListMachines entries carry a provider ID and a machine name"}

	ruleVolumeMapping  = rule{"§6.6.3", "GetVolumeIDs maps the driver's volumes to their IDs and leaves out the others"}
	ruleVolumeResponse = rule{"§6.6.2", "GetVolumeIDs answers only for requested volumes, at most once each, with a volume ID of at most 1024 bytes"}

	ruleTransportStatus = rule{"§7.1", "every answer is a gRPC status"}

	ruleNoSecretEcho = rule{"§8.3", "secret values never appear in error messages or response fields"}

	ruleConcurrency = rule{"§9", "calls for distinct machines succeed in parallel"}

	ruleDeadline    = rule{"§10.2", "a call is answered by its deadline"}
	ruleCreateRetry = rule{"§10.2", "a CreateMachine cut short by its deadline and retried with the same name completes without a second VM"}

	ruleCleanup = rule{"§6.3.3", "DeleteMachine removes every VM of the run"}
)

// describe renders a call's error for a failure message: the code name and
// the driver's message.
func describe(err error) string {
	if err == nil {
		return "OK"
	}
	var te timeoutError
	if errors.As(err, &te) {
		return te.Error()
	}
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Sprintf("non-status error %v", err)
	}
	if st.Message() == "" {
		return codeName(st.Code())
	}
	return fmt.Sprintf("%s (%q)", codeName(st.Code()), st.Message())
}

// codeName is the canonical upper-case name of a code, as the spec writes it.
func codeName(c codes.Code) string {
	switch c {
	case codes.OK:
		return "OK"
	case codes.Canceled:
		return "CANCELLED"
	}
	// codes.Code.String() gives "InvalidArgument"; the spec writes
	// INVALID_ARGUMENT.
	var b strings.Builder
	for i, r := range c.String() {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
		}
		b.WriteRune(r)
	}
	return strings.ToUpper(b.String())
}

// codeOf returns the gRPC code of err (OK for nil).
func codeOf(err error) codes.Code {
	var te timeoutError
	if errors.As(err, &te) {
		return codes.DeadlineExceeded
	}
	return status.Code(err)
}

// expectOK fails t with r when err is not nil and reports whether it was
// nil. what names the call, e.g. "CreateMachine #2".
func expectOK(t T, r rule, what string, err error) bool {
	t.Helper()
	if err != nil {
		r.errorf(t, "%s answered %s, want OK", what, describe(err))
		return false
	}
	return true
}

// expectCode fails t with r when err does not carry want.
func expectCode(t T, r rule, what string, err error, want codes.Code) bool {
	t.Helper()
	if got := codeOf(err); got != want {
		r.errorf(t, "%s answered %s, want %s", what, describe(err), codeName(want))
		return false
	}
	return true
}
