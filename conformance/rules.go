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
	ruleTransportStatus = rule{"§7", "errors are gRPC status codes"}

	ruleVersionServed      = rule{"§3", "the driver serves machina.driver.v1alpha1"}
	ruleKnownCapabilities  = rule{"§3", "capabilities are known Capability.Type values"}
	ruleUnadvertisedUnimpl = rule{"§3", "an RPC whose capability is not advertised answers UNIMPLEMENTED"}
	ruleAdvertisedImpl     = rule{"§3", "an RPC whose capability is advertised is implemented"}

	rulePluginName    = rule{"§5", "GetPluginInfo.name is at most 63 characters of [a-z0-9.-], starting and ending with an alphanumeric"}
	ruleVendorVersion = rule{"§5", "GetPluginInfo.vendor_version is a semantic version, optionally with a leading v"}
	ruleManifest      = rule{"§5", "GetPluginInfo.manifest has at most 16 entries of at most 128 bytes each"}
	ruleProbe         = rule{"§5", "Probe answers OK"}
	ruleIdentityOK    = rule{"§5", "the identity RPCs answer OK"}

	ruleRequiredFields = rule{"§4", "a missing or invalid REQUIRED field answers INVALID_ARGUMENT naming the field"}
	ruleNoVMOnReject   = rule{"§4", "a rejected CreateMachine creates no VM"}

	ruleCreateOK           = rule{"§6.1", "CreateMachine of a new machine answers OK"}
	ruleCreateResponse     = rule{"§6.1", "CreateMachine returns a provider ID and a node name"}
	ruleCreateIdempotent   = rule{"§6.1", "CreateMachine is idempotent"}
	ruleCreateOneVM        = rule{"§6.1", "repeated CreateMachine calls leave exactly one VM"}
	ruleCreateIncompatible = rule{"§6.1", "CreateMachine with an incompatible provider_spec for an existing VM answers ALREADY_EXISTS"}
	ruleLastKnownState     = rule{"§6.1", "last_known_state round trips"}
	ruleCreateRetry        = rule{"§6.1", "a timed-out CreateMachine retried with the same name succeeds without a second VM"}

	ruleInitialize = rule{"§6.2", "InitializeMachine completes the set-up of a VM"}

	ruleDeleteOK         = rule{"§6.3", "DeleteMachine of an existing VM answers OK"}
	ruleDeleteRemoves    = rule{"§6.3", "after DeleteMachine the VM is gone"}
	ruleDeleteIdempotent = rule{"§6.3", "DeleteMachine of a VM that is gone answers OK"}
	ruleDeleteUnknown    = rule{"§6.3", "DeleteMachine of a machine that never existed answers OK"}
	ruleDeleteByName     = rule{"§6.3", "DeleteMachine finds the VM by Machine.name when provider_id is empty"}

	ruleStatusMatches    = rule{"§6.4", "GetMachineStatus of a created machine returns what CreateMachine returned"}
	ruleStatusUnknown    = rule{"§6.4", "GetMachineStatus of an unknown machine answers NOT_FOUND"}
	ruleStatusProviderID = rule{"§6.4", "GetMachineStatus with a provider_id the VM does not have answers NOT_FOUND"}
	ruleNeedsInit        = rule{"§6.4", "needs_initialization is only set by drivers with TYPE_INITIALIZE_MACHINE"}

	ruleListContains = rule{"§6.5", "ListMachines lists every VM the driver created for the class, once each"}
	ruleListResponse = rule{"§6.5", "ListMachines entries carry a provider ID and a machine name"}

	ruleVolumeMapping  = rule{"§6.6", "GetVolumeIDs maps the driver's volumes to their IDs and leaves out the others"}
	ruleVolumeResponse = rule{"§6.6", "GetVolumeIDs answers only for requested volumes, once each, with a volume ID"}

	ruleNoSecretEcho = rule{"§8", "secret values never appear in error messages"}

	ruleConcurrency = rule{"§9", "calls for distinct machines succeed in parallel"}

	ruleDeadline = rule{"§10", "a call answers by its deadline"}

	ruleCleanup = rule{"§6.3", "no VM is left behind after DeleteMachine answered OK"}
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
