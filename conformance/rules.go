package conformance

import (
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// rule is one obligation of the Driver API as the suite checks it: the id
// of the sentence of docs/driver-api.md that states it (§1.3 there) and a
// short statement of what the suite checks. Every failure message starts
// with the id, the section and the statement and ends with the spec's
// sentence, so a reader knows what is broken and where to read about it.
// The ids are checked against the spec by TestTraceability, and
// docs/conformance-matrix.md lists the tests that cite each.
type rule struct {
	id   string
	text string
}

// String renders the rule as "[id] §section statement".
func (r rule) String() string {
	return "[" + r.id + "] §" + specSentences[r.id].section + " " + r.text
}

// sentence renders the spec's sentence for the end of a failure message.
func (r rule) sentence() string {
	return "\n    " + r.id + " says: " + specSentences[r.id].text
}

// errorf fails t with the rule and the details; for a rule in
// warningRules it records a warning instead (see warnf).
func (r rule) errorf(t T, format string, args ...any) {
	t.Helper()
	if why, ok := warningRules[r]; ok {
		warnf(t, "%s: %s (%s)%s", r, fmt.Sprintf(format, args...), why, r.sentence())
		return
	}
	t.Errorf("%s: %s%s", r, fmt.Sprintf(format, args...), r.sentence())
}

// Why a rule only warns.
const (
	// §3.2 of the Driver API: an obligation the suite did not check before
	// is first a warning of the suite, so that a driver that conformed
	// yesterday does not fail today; it becomes a failure in the suite's
	// next minor version (the changelog, §3.7 there, says which).
	warnNewCheck = "a warning, not a failure: the suite did not check this before (Driver API §3.2, §3.7)"
	// §7 of docs/conformance.md: only MUSTs fail a check.
	warnShould = "a warning, not a failure: a SHOULD"
)

// warningRules are the rules whose breach is reported as a warning, with
// the reason. A warning never fails a test or the run.
var warningRules = map[rule]string{
	ruleLaunchPrecedence:  warnNewCheck,
	ruleLaunchStale:       warnNewCheck,
	ruleLaunchLive:        warnShould,
	ruleLaunchNonSocket:   warnNewCheck,
	ruleLaunchNewDir:      warnNewCheck,
	ruleLaunchExistingDir: warnNewCheck,
	ruleLaunchSocketMode:  warnNewCheck,
	ruleLaunchGraceful:    warnShould,
	ruleLaunchSocketGone:  warnShould,
	ruleLaunchRestart:     warnNewCheck,
	ruleLaunchBadEndpoint: warnNewCheck,
	ruleLaunchLongPath:    warnShould,
	ruleLaunchOtherFiles:  warnNewCheck,
	ruleLaunchNoTCP:       warnNewCheck,
	// A provider may be down for a whole timeout; the check that made the
	// call fails by its own rule, this names the code's rule besides.
	ruleThrottled: warnNewCheck,

	// New checks of existing sentences (the clause-level audit, issue 31):
	// a driver the suite passed before may break them, so they warn for
	// one minor version (§3.7 says until when).
	ruleClassNamespaceNoVM: warnNewCheck,
	ruleDeleteRecorded:     warnNewCheck,
	ruleUpdateNoPartial:    warnNewCheck,
	ruleUpdateNoDisrupt:    warnNewCheck,
	ruleUpdateFound:        warnNewCheck,
	ruleUpdateParallel:     warnNewCheck,
	ruleUpdateDeletedID:    warnNewCheck,
	ruleUpdateReasonCap:    warnNewCheck,
	ruleStableAtEnd:        warnNewCheck,
	ruleStableCapsEnd:      warnNewCheck,
	ruleFixtureStable:      warnNewCheck,
	ruleFixtureIDStable:    warnNewCheck,
	ruleIncompatibleKept:   warnNewCheck,
	ruleInitRepeatSame:     warnNewCheck,
}

// warner is implemented by a T that records warnings (the Runner's).
type warner interface {
	Warnf(format string, args ...any)
}

// warnf records a warning on t: through Warnf where t has it, else as a log
// line that starts with "WARNING".
func warnf(t T, format string, args ...any) {
	if w, ok := t.(warner); ok {
		w.Warnf(format, args...)
		return
	}
	t.Logf("WARNING "+format, args...)
}

// fatalf fails t with the rule and ends the test.
func (r rule) fatalf(t T, format string, args ...any) {
	t.Helper()
	t.Fatalf("%s: %s%s", r, fmt.Sprintf(format, args...), r.sentence())
}

// The rules the suite checks, by section of docs/driver-api.md.
var (
	ruleSocketMode   = rule{"R-2.2-socket-file-have-mode", "the socket file has mode 0600 (no access for group and others)"}
	ruleSocketPath   = rule{"R-2.2-path-most-107-bytes", "the socket path is at most 107 bytes"}
	ruleConnections  = rule{"R-2.6-accept-several-connections", "a driver accepts several connections and ties no state to one"}
	ruleStableAnswer = rule{"R-2.7-stable-identity", "GetPluginInfo and GetPluginCapabilities answer the same for the life of the process"}

	// The rules only the launcher mode can see (launcher_tests.go).
	ruleLaunchPrecedence  = rule{"R-2.1-accept-flag-environment", "the endpoint comes from --endpoint, else MACHINA_DRIVER_ENDPOINT, else the default"}
	ruleLaunchStale       = rule{"R-2.2-socket-file-exists-path", "a stale socket at the path is removed and the driver serves"}
	ruleLaunchLive        = rule{"R-2.2-process-still-accepts-connections", "a socket another process serves makes the driver refuse to start"}
	ruleLaunchNonSocket   = rule{"R-2.2-anything-else-exists-path", "anything but a socket at the path makes the driver refuse to start, and is kept"}
	ruleLaunchNewDir      = rule{"R-2.2-parent-directory-not-exist", "a missing socket directory is created with no permissions for others"}
	ruleLaunchExistingDir = rule{"R-2.2-not-change-mode-owner", "an existing socket directory keeps its mode and owner"}
	ruleLaunchSocketMode  = rule{"R-2.2-socket-file-have-mode", "the socket has mode 0600 when the driver answers its first call"}
	ruleLaunchGraceful    = rule{"R-2.7-finish-within-pod-termination", "on SIGTERM the calls in flight finish and the driver exits with status 0 within the grace period"}
	ruleLaunchSocketGone  = rule{"R-2.2-exit-remove-socket-file", "on exit the driver removes its socket"}
	ruleLaunchRestart     = rule{"R-2.7-keep-idempotency-contract", "a restarted driver keeps the idempotency contract for the VMs of the process before"}
	ruleLaunchBadEndpoint = rule{"R-2.1-refuse-start-message-naming", "an endpoint of another scheme or a relative unix:// path makes the driver exit non-zero with a message naming it"}
	ruleLaunchLongPath    = rule{"R-2.2-report-message-naming-path", "a socket path over 107 bytes makes the driver exit non-zero with a message naming the path"}
	ruleLaunchOtherFiles  = rule{"R-2.2-not-create-other-files", "the driver creates nothing next to its socket"}
	ruleLaunchNoTCP       = rule{"R-2.3-listen-tcp-only-operator", "given a unix:// endpoint, the driver serves the Driver API on no TCP port, also when the socket cannot be made"}

	ruleVersionServed      = rule{"R-5-implement-all-three-rpcs", "the driver serves machina.driver.v1alpha1"}
	ruleKnownCapabilities  = rule{"R-3.4-not-list-type-unspecified", "a driver never advertises TYPE_UNSPECIFIED (values the suite does not know are logged, not failed)"}
	ruleUnadvertisedUnimpl = rule{"R-3.5-unadvertised-unimplemented", "an OPTIONAL RPC whose capability is not advertised answers UNIMPLEMENTED"}
	ruleAdvertisedImpl     = rule{"R-3.5-advertised-implemented", "an OPTIONAL RPC whose capability is advertised is implemented"}

	ruleRequiredFields = rule{"R-4.1-receives-request-required", "a missing or malformed REQUIRED field answers INVALID_ARGUMENT naming the field path"}
	ruleLastKnownState = rule{"R-4.7-not-depend-correctness", "last_known_state is accepted back and the driver does not depend on it"}

	rulePluginName    = rule{"R-5.1.2-name-form", "GetPluginInfo.name is at most 63 characters of [a-z0-9.-], starting and ending with an alphanumeric"}
	ruleVendorVersion = rule{"R-5.1.2-vendor-version-form", "GetPluginInfo.vendor_version is a semantic version of at most 128 bytes, optionally with a leading v"}
	ruleManifest      = rule{"R-5.1.2-manifest-limits", "GetPluginInfo.manifest has at most 16 entries of at most 128 bytes each"}
	ruleProviders     = rule{"R-5.1.2-providers-form", "GetPluginInfo.providers are 1 to 63 bytes each, none listed twice"}
	ruleProbe         = rule{"R-5.3.2-answer-within-5-seconds", "Probe answers OK within 5 seconds"}
	ruleIdentityOK    = rule{"R-5-implement-all-three-rpcs", "the identity RPCs answer OK"}

	ruleCreateOK           = rule{"R-6.1.3-no-vm-create-one", "CreateMachine of a new machine answers OK"}
	ruleCreateResponse     = rule{"R-4.2-sender-respect-these-limits", "CreateMachine returns a provider ID and a node name within their limits"}
	ruleCreateIdempotent   = rule{"R-6.1.3-one-vm-compatible-request", "CreateMachine is idempotent on machine.name"}
	ruleCreateOneVM        = rule{"R-6.1.3-retry-no-second-vm", "repeated CreateMachine calls leave exactly one VM"}
	ruleCreateIncompatible = rule{"R-6.1.3-one-vm-incompatible-request", "CreateMachine with an incompatible provider_spec for an existing VM answers ALREADY_EXISTS and keeps the VM"}

	ruleInitialize = rule{"R-6.2.3-after-answered-ok-getmachinestatus", "InitializeMachine completes the set-up of the VM with machine.provider_id, idempotently"}
	ruleInitNotFnd = rule{"R-6.2.4-not-found-no-vm-machine", "InitializeMachine of a VM that does not exist answers NOT_FOUND"}

	ruleDeleteOK         = rule{"R-6.3-required", "DeleteMachine of an existing VM answers OK"}
	ruleDeleteRemoves    = rule{"R-6.3.3-gone-after-ok", "after DeleteMachine answered OK the VM is gone"}
	ruleDeleteIdempotent = rule{"R-6.3.3-idempotent", "DeleteMachine of a VM that is gone answers OK"}
	ruleDeleteUnknown    = rule{"R-6.3.4-gone-answers-ok", "DeleteMachine of a machine that never existed answers OK"}
	ruleDeleteByName     = rule{"R-6.3.3-no-provider-id-by-name", "DeleteMachine without provider_id deletes the VM found by machine.name"}
	ruleDeleteOnlyID     = rule{"R-6.3.3-only-that-provider-id", "DeleteMachine with a provider_id deletes only the VM with that provider ID"}
	ruleRecreate         = rule{"R-6.3.3-gone-after-ok", "CreateMachine after DeleteMachine answered OK creates a new VM"}

	ruleStatusMatches    = rule{"R-6.4.3-lookup-one-vm", "GetMachineStatus of a created machine returns what CreateMachine returned"}
	ruleStatusUnknown    = rule{"R-6.4.3-lookup-no-vm", "GetMachineStatus of an unknown machine answers NOT_FOUND"}
	ruleStatusProviderID = rule{"R-6.4.3-lookup-one-vm", "GetMachineStatus with a provider_id the VM does not have answers NOT_FOUND"}
	ruleNeedsInit        = rule{"R-6.4.2-needs-init-capability", "needs_initialization is only set by drivers with TYPE_INITIALIZE_MACHINE"}

	ruleListContains = rule{"R-6.5.2-every-vm-once", "ListMachines lists every VM the driver created for the class, once each"}
	ruleListScope    = rule{"R-6.5.3-only-class-vms", "ListMachines lists only VMs of the class with this machine_class.namespace and machine_class.name"}
	ruleListResponse = rule{"R-4.1-field-marked-required-set", "ListMachines entries carry a provider ID and a machine name"}

	ruleVolumeMapping  = rule{"R-6.6.2-own-volumes-only", "GetVolumeIDs maps the driver's volumes to their IDs and leaves out the others"}
	ruleVolumeResponse = rule{"R-6.6.3-one-entry-per-volume", "GetVolumeIDs answers only for requested volumes, at most once each, with a volume ID of at most 1024 bytes"}

	ruleTransportStatus = rule{"R-7.1-failed-call-carry-non-ok", "every answer is a gRPC status"}

	ruleNoSecretEcho = rule{"R-8.3-not-put-secret-values", "secret values never appear in error messages or response fields"}

	ruleConcurrency = rule{"R-9-thread-safe", "calls for distinct machines succeed in parallel"}

	ruleDeadline    = rule{"R-10.2-end-call-deadline-own", "a call is answered by its deadline"}
	ruleCreateRetry = rule{"R-10.2-next-call-same-machine", "a CreateMachine cut short by its deadline and retried with the same name completes without a second VM"}

	ruleCleanup = rule{"R-6.3-required", "DeleteMachine removes every VM of the run"}
)

// Rules added when every sentence of the spec was traced to a check
// (docs/conformance-matrix.md): each closes a class of contract violations
// the checks above let pass.
var (
	ruleRequiredImpl       = rule{"R-3.5-required-implemented", "a REQUIRED RPC never answers UNIMPLEMENTED"}
	ruleStableCaps         = rule{"R-3.4-stable-capabilities", "GetPluginCapabilities answers the same set for the life of the process"}
	ruleUnknownFields      = rule{"R-3.2-ignore-unknown-fields", "a request carrying fields of a later revision of v1alpha1 is served as without them"}
	ruleUnknownMetadata    = rule{"R-2.4-core-may-send-metadata", "a call carrying metadata the driver does not know is served as without it"}
	ruleNoMetadataNeeded   = rule{"R-2.4-not-require-metadata", "a call without any metadata is served"}
	ruleOptionalUnset      = rule{"R-4.1-not-require-optional-field", "a request with every OPTIONAL field unset is served"}
	ruleProviderSpecObject = rule{"R-4.4-answer-invalid-argument", "a provider_spec that is missing, not JSON or not a JSON object answers INVALID_ARGUMENT naming machine_class.provider_spec"}
	ruleLongestName        = rule{"R-4.3-full-name-range", "a machine name of 253 characters gets a VM that is found and deleted by that name"}
	ruleLargestRequest     = rule{"R-2.5-accept-4-mib-requests", "a request of up to 4 MiB within the field limits is accepted"}
	ruleMissingKey         = rule{"R-4.5-missing-key-named", "a missing secret key the driver needs answers INVALID_ARGUMENT naming that key"}
	ruleStateNoSecret      = rule{"R-4.7-core-not-interpret-but", "last_known_state carries no secret value, in no encoding"}
	ruleProviderIDUnique   = rule{"R-4.8-provider-id-unique-stable", "provider IDs are unique among VMs and do not change for a VM's life"}
	ruleProviderIDNew      = rule{"R-4.8-provider-id-not-reused", "a new VM never gets the provider ID of a deleted one"}
	ruleNodeNameStable     = rule{"R-4.8-node-name-stable", "a VM's node_name does not change for its life"}
	ruleUIDNotKey          = rule{"R-4.9-may-record-vm-diagnosis", "machine.uid is neither the idempotency key nor a reason to refuse a call"}
	ruleNotCompared        = rule{"R-6.1.3-not-compare-secrets-user-data", "a repeated CreateMachine with other user_data, labels, annotations or last_known_state is compatible"}
	ruleInitProviderID     = rule{"R-6.2.2-vm-provider-id-equal", "InitializeMachine answers with the provider ID it was given"}
	ruleInitRepeat         = rule{"R-6.2.3-call-vm-already-initialized", "InitializeMachine of an initialized VM answers OK and changes nothing"}
	ruleInitOtherID        = rule{"R-6.2.3-not-initialize-vm-another", "InitializeMachine with a provider ID the machine's VM does not have initializes nothing and answers NOT_FOUND"}
	ruleLookupDeleted      = rule{"R-6.4.3-lookup-deleted", "a deleted VM does not count in a lookup, also when a new VM of the name exists"}
	ruleVolumeInvalid      = rule{"R-6.6.4-invalid-argument-volumes", "no volumes, or a volume without name or spec, answers INVALID_ARGUMENT naming the field"}
	ruleVolumeSpecInvalid  = rule{"R-6.6.4-invalid-argument-naming", "a volume spec that is not a JSON object answers INVALID_ARGUMENT naming volumes[i].spec"}
	ruleSameMachine        = rule{"R-9-handle-safely-may-answer", "concurrent calls for one machine each answer OK with the same VM or ABORTED"}
	ruleOneCreation        = rule{"R-9-not-run-two-creations", "concurrent CreateMachine calls for one machine leave exactly one VM"}
)

// The rules of UpdateMachine (§6.7).
var (
	ruleUpdateOneResult  = rule{"R-6.7.2-exactly-one-result", "UpdateMachine answers OK with exactly one of applied and needs_new_vm"}
	ruleUpdateProviderID = rule{"R-6.7.2-applied-provider-id-equal", "UpdateMachine answers applied with the provider ID it was given"}
	ruleUpdateReason     = rule{"R-6.7.2-reason-set", "needs_new_vm carries a reason of at most 1024 bytes"}
	ruleUpdateKeepsVM    = rule{"R-6.7.3-applied-keeps-vm", "an applied update keeps the VM: its node name does not change"}
	ruleUpdateMatches    = rule{"R-6.7.3-applied-matches-new-class", "after an applied update the VM matches the new class: CreateMachine with it answers OK with the same VM"}
	ruleUpdateUntouched  = rule{"R-6.7.3-needs-new-vm-untouched", "needs_new_vm leaves the VM as it was: CreateMachine with the old class answers OK with the same VM"}
	ruleUpdateNotError   = rule{"R-6.7.3-needs-new-vm-not-error", "a change the VM cannot take is answered OK with needs_new_vm, not with an error code"}
	ruleUpdateIdempotent = rule{"R-6.7.3-idempotent", "a repeated UpdateMachine answers as the first and changes nothing more"}
	ruleUpdateOtherID    = rule{"R-6.7.3-only-that-provider-id", "UpdateMachine with a provider ID the machine's VM does not have updates nothing and answers NOT_FOUND"}
	ruleUpdateDeletedID  = rule{"R-6.7.3-only-that-provider-id", "UpdateMachine with the provider ID of a deleted VM, while a new VM of the name exists, answers NOT_FOUND and leaves the new VM alone"}
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

// invalidArgumentRule is the rule a missing or malformed field breaks: the
// provider spec and the volumes have sentences of their own (§4.4, §6.6.4).
func invalidArgumentRule(field string) rule {
	switch {
	case strings.HasPrefix(field, "machine_class.provider_spec"):
		return ruleProviderSpecObject
	case strings.HasPrefix(field, "volumes") && strings.HasSuffix(field, ".spec"):
		return ruleVolumeSpecInvalid
	case strings.HasPrefix(field, "volumes"):
		return ruleVolumeInvalid
	}
	return ruleRequiredFields
}

// Rules of the clause-level audit: sentences that had been filed as
// restating another, and clauses of UpdateMachine, stability and the
// answers' codes that the checks above did not reach.
var (
	ruleClassNamespace     = rule{"R-4.9-createmachine-request-two", "a CreateMachine whose machine_class.namespace differs from machine.namespace answers INVALID_ARGUMENT naming machine_class.namespace and creates no VM"}
	ruleClassNamespaceNoVM = rule{"R-4.9-createmachine-request-two", "a CreateMachine refused for a namespace mismatch creates no VM"}
	ruleAbortedSame        = rule{"R-7.2-aborted", "ABORTED is answered only while another operation for the same machine is in flight"}
	ruleThrottled          = rule{"R-7.2-unavailable", "UNAVAILABLE is transient: a provider that throttles lets a call through within its timeout"}
	ruleByteIdentical      = rule{"R-6.1.3-byte-identical-compatible", "a repeated CreateMachine with a byte-identical provider_spec is compatible"}
	ruleDeleteRecorded     = rule{"R-6.3.3-compares-finds-vm-recorded", "DeleteMachine with the provider ID of another Machine's VM answers OK"}
	ruleNotReady           = rule{"R-5.3.2-ready-when-serving", "a driver reports ready (ready=true or unset) once it serves MachineService calls"}
	ruleUpdateNoPartial    = rule{"R-6.7.3-no-partial-change", "an update that needs a new VM for one of its differences applies none of them"}
	ruleUpdateNoDisrupt    = rule{"R-6.7.3-no-disruption", "an applied update keeps the VM as it was set up: an initialized VM needs no initialization afterwards"}
	ruleUpdateFound        = rule{"R-6.7.3-applied-matches-new-class", "after an applied update GetMachineStatus by name and ListMachines still find the VM with its provider ID"}
	ruleUpdateParallel     = rule{"R-7.2-aborted", "UpdateMachine calls for distinct machines of one class succeed at once; ABORTED is for the same machine only"}
	ruleUpdateReasonCap    = rule{"R-6.7.2-reason-set", "needs_new_vm carries a reason of 1 to 1024 bytes on every answer, the repeated ones too"}
	ruleStableAtEnd        = rule{"R-2.7-stable-identity", "GetPluginInfo (name, vendor_version, manifest, providers) answers the same whenever the suite samples it and at the end of the run"}
	ruleStableCapsEnd      = rule{"R-3.4-stable-capabilities", "GetPluginCapabilities answers the same set whenever the suite samples it and at the end of the run"}
	ruleFixtureStable      = rule{"R-4.8-node-name-stable", "the shared VM is found with its node name to the end of the run"}
	ruleFixtureIDStable    = rule{"R-4.8-provider-id-unique-stable", "the shared VM keeps its provider ID to the end of the run"}
	ruleInitRepeatSame     = rule{"R-6.2.3-call-vm-already-initialized", "a repeated InitializeMachine answers the values of the initialized VM: the node name of the first call"}
	ruleIncompatibleKept   = rule{"R-6.1.3-one-vm-incompatible-request", "an incompatible CreateMachine leaves the VM as it was: a repeat with the provider_spec it was created with still answers OK with it"}
)
