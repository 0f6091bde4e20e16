package trace

// Clauses cuts each checked sentence into the parts a driver can break one
// at a time (see Clause). A sentence with one clause lets its mutants leave
// the clause out of their id. Reviewing a new sentence: one clause per
// obligation (each MUST, MUST NOT, SHOULD or REQUIRED and what it binds),
// and one per case the sentence names that a check sends on its own (a
// trigger, a limit, an answer field).
var Clauses = map[string][]Clause{
	// §2: the process, seen only by launching the driver.
	"R-2.1-accept-flag-environment": {
		{Name: "flag", Quote: "MUST accept the flag", Process: true},
		{Name: "environment", Quote: "the environment variable", Process: true},
		{Name: "precedence", Quote: "in this order of precedence", Process: true},
	},
	"R-2.1-refuse-start-message-naming": {
		{Name: "naming", Quote: "MUST refuse to start, with a message naming the value", Process: true},
		{Name: "relative-path", Quote: "a `unix://` address has a relative path", Process: true},
	},
	"R-2.2-report-message-naming-path": {
		{Name: "naming", Quote: "SHOULD report this with a message naming the path", Process: true},
	},
	"R-2.2-parent-directory-not-exist": {
		{Name: "mode", Quote: "MUST create it (and missing ancestors) with no permissions for others", Process: true},
	},
	"R-2.2-not-change-mode-owner": {
		{Name: "mode", Quote: "MUST NOT change the mode", Process: true},
		{Name: "owner", Quote: "or owner", Process: true},
	},
	"R-2.2-socket-file-exists-path": {
		{Name: "removed", Quote: "the driver MUST remove it before listening", Process: true},
	},
	"R-2.2-process-still-accepts-connections": {
		{Name: "refused", Quote: "SHOULD refuse to start rather than cut that driver off", Process: true},
	},
	"R-2.2-anything-else-exists-path": {
		{Name: "kept", Quote: "MUST NOT remove it", Process: true},
		{Name: "refused", Quote: "MUST refuse to start", Process: true},
	},
	"R-2.2-socket-file-have-mode": {
		{Name: "mode", Quote: "The socket file MUST have mode `0600`"},
		{Name: "before-first-call", Quote: "before the driver answers its first call", Process: true},
	},
	"R-2.2-exit-remove-socket-file": {
		{Name: "removed", Quote: "On exit the driver SHOULD remove its socket file", Process: true},
	},
	"R-2.2-not-create-other-files": {
		{Name: "none", Quote: "MUST NOT create other files next to the socket", Process: true},
	},
	"R-2.3-listen-tcp-only-operator": {
		{Name: "only-explicit", Quote: "MUST listen on TCP only when the operator gave a `tcp://` address explicitly", Process: true},
		{Name: "no-fallback", Quote: "MUST NOT fall back to TCP", Process: true},
	},
	"R-2.7-keep-idempotency-contract": {
		{Name: "kept", Quote: "MUST keep the idempotency contract across the restart", Process: true},
	},
	"R-2.7-finish-within-pod-termination": {
		{Name: "finish", Quote: "SHOULD finish within the pod's termination grace period", Process: true},
	},

	// §2: transport, seen by a client.
	"R-2.4-core-may-send-metadata": {{Name: "ignored", Quote: "a driver MUST ignore metadata it does not know"}},
	"R-2.4-not-require-metadata":   {{Name: "not-required", Quote: "MUST NOT require metadata"}},
	"R-2.5-accept-4-mib-requests":  {{Name: "accepted", Quote: "MUST accept requests up to 4 MiB"}},
	"R-2.6-accept-several-connections": {
		{Name: "several", Quote: "MUST accept several connections"},
		{Name: "no-state", Quote: "MUST NOT tie state to a connection"},
	},
	"R-2.7-stable-identity": {
		{Name: "info", Quote: "MUST return the same `GetPluginInfo`"},
		{Name: "capabilities", Quote: "`GetPluginCapabilities` answers", Unbroken: "the checks report changed capabilities as R-3.4-stable-capabilities#stable"},
	},

	// §3: versions and capabilities.
	"R-3.2-ignore-unknown-fields":      {{Name: "accepted", Quote: "a driver MUST NOT reject a request because it carries unknown fields"}},
	"R-3.4-not-list-type-unspecified":  {{Name: "not-listed", Quote: "MUST NOT list `TYPE_UNSPECIFIED`"}},
	"R-3.4-stable-capabilities":        {{Name: "stable", Quote: "MUST stay the same for the life of the driver process"}},
	"R-3.5-unadvertised-unimplemented": {{Name: "unimplemented", Quote: "answer `UNIMPLEMENTED`"}},
	"R-3.5-advertised-implemented":     {{Name: "implemented", Quote: "never answer `UNIMPLEMENTED`"}},
	"R-3.5-required-implemented":       {{Name: "implemented", Quote: "A REQUIRED RPC"}},

	// §4: fields.
	"R-4.1-field-marked-required-set": {{Name: "set", Quote: "A field marked **REQUIRED** MUST be set by the sender"}},
	"R-4.1-receives-request-required": {
		{Name: "missing", Quote: "a REQUIRED field missing"},
		{Name: "malformed", Quote: "or malformed", Unbroken: "each malformed field the suite sends has a sentence of its own, whose check reports it: a provider_spec R-4.4-answer-invalid-argument, a class of another namespace R-4.9-createmachine-request-two, a volume spec R-6.6.4-invalid-argument-naming"},
		{Name: "code", Quote: "MUST answer `INVALID_ARGUMENT`"},
		{Name: "names-field", Quote: "names the field path"},
	},
	"R-4.1-not-require-optional-field":  {{Name: "not-required", Quote: "MUST NOT require an OPTIONAL field"}},
	"R-4.2-sender-respect-these-limits": {{Name: "limits", Quote: "The sender MUST respect these limits"}},
	"R-4.3-full-name-range": {
		{Name: "full-range", Quote: "MUST handle the full 253-character range"},
		{Name: "unique", Quote: "MUST keep the mapping from name to VM unique"},
	},
	"R-4.4-answer-invalid-argument": {
		{Name: "names-field", Quote: "MUST answer `INVALID_ARGUMENT` (`machine_class.provider_spec must be a JSON object`)"},
		{Name: "empty", Quote: "when it is empty"},
		{Name: "not-json", Quote: "not JSON"},
		{Name: "other-json", Quote: "or another JSON value (array, string, number)"},
	},
	"R-4.5-missing-key-named": {
		{Name: "names-key", Quote: "MUST answer `INVALID_ARGUMENT` naming the key"},
		{Name: "each-key", Quote: "when a key it needs is missing"},
	},
	"R-4.7-core-not-interpret-but":    {{Name: "no-secrets", Quote: "it MUST NOT contain secrets"}},
	"R-4.7-not-depend-correctness":    {{Name: "not-depended-on", Quote: "MUST NOT depend on it for correctness"}},
	"R-4.8-provider-id-unique-stable": {{Name: "unique", Quote: "MUST be unique among all VMs the driver manages"}, {Name: "stable", Quote: "it MUST NOT change for the VM's life"}},
	"R-4.8-provider-id-not-reused":    {{Name: "not-reused", Quote: "MUST NOT be reused for another VM"}},
	"R-4.8-node-name-stable":          {{Name: "stable", Quote: "MUST NOT change for the VM's life"}},
	"R-4.9-may-record-vm-diagnosis": {
		{Name: "not-key", Quote: "MUST NOT use it as the idempotency key"},
		{Name: "not-rejected", Quote: "MUST NOT reject a call because it differs from the recorded one"},
	},
	"R-4.9-createmachine-request-two": {
		{Name: "code", Quote: "the driver MUST answer `INVALID_ARGUMENT`"},
		{Name: "names-field", Quote: "naming `machine_class.namespace`"},
		{Name: "no-vm", Quote: "MUST NOT create a VM"},
	},

	// §5: identity.
	"R-5-implement-all-three-rpcs": {{Name: "implemented", Quote: "MUST implement all three RPCs of `IdentityService`"}},
	"R-5.1.2-name-form": {
		{Name: "length", Quote: "At most 63 characters"},
		{Name: "form", Quote: "`^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$`"},
	},
	"R-5.1.2-vendor-version-form": {{Name: "form", Quote: "Regular expression:"}},
	"R-5.1.2-manifest-limits": {
		{Name: "entries", Quote: "At most 16 entries"},
		{Name: "keys", Quote: "keys"},
		{Name: "values", Quote: "values at most 128 bytes"},
	},
	"R-5.1.2-providers-form": {
		{Name: "size", Quote: "each 1 to 63 bytes (UTF-8)"},
		{Name: "once", Quote: "none listed twice"},
	},
	"R-5.3.2-answer-within-5-seconds": {
		{Name: "answer", Quote: "MUST answer"},
		{Name: "in-time", Quote: "within 5 seconds"},
	},
	"R-5.3.2-ready-when-serving": {{Name: "ready", Quote: "MUST report ready"}},

	// §6.1: CreateMachine.
	"R-6.1.3-no-vm-create-one":          {{Name: "created", Quote: "Create one VM"}},
	"R-6.1.3-one-vm-compatible-request": {{Name: "existing-id", Quote: "`OK` with **the existing VM's** provider ID"}},
	"R-6.1.3-one-vm-incompatible-request": {
		{Name: "unchanged", Quote: "not change the existing one"},
		{Name: "already-exists", Quote: "`ALREADY_EXISTS`"},
	},
	"R-6.1.3-no-vm-machine-but": {
		{Name: "never-returned", Quote: "Never return, change or delete that VM"},
	},
	"R-6.1.3-byte-identical-compatible": {{Name: "ok", Quote: "MUST answer `OK` with the existing VM"}},
	"R-6.1.3-not-compare-secrets-user-data": {
		{Name: "secrets", Quote: "MUST NOT compare `secrets`", Unbroken: "the suite sends the secrets it was given and has no second set to repeat a call with"},
		{Name: "user-data", Quote: "`user_data` (it changes between calls"},
		{Name: "last-known-state", Quote: "`last_known_state`"},
		{Name: "uid", Quote: "`machine.uid`", Unbroken: "the check reports a compared uid as R-4.9-may-record-vm-diagnosis#not-rejected"},
		{Name: "labels", Quote: "labels or"},
		{Name: "annotations", Quote: "or annotations"},
	},
	"R-6.1.3-retry-no-second-vm": {{Name: "one-vm", Quote: "MUST NOT create a second VM"}},

	// §6.2: InitializeMachine.
	"R-6.2.2-vm-provider-id-equal": {{Name: "equal", Quote: "MUST equal `machine.provider_id`"}},
	"R-6.2.3-call-vm-already-initialized": {
		{Name: "ok", Quote: "MUST answer `OK`"},
		{Name: "current-values", Quote: "with the current values"},
	},
	"R-6.2.3-after-answered-ok-getmachinestatus": {{Name: "initialized", Quote: "MUST answer `needs_initialization=false`"}},
	"R-6.2.3-not-initialize-vm-another":          {{Name: "not-other", Quote: "MUST NOT initialize a VM with another provider ID"}},
	"R-6.2.4-not-found-no-vm-machine":            {{Name: "not-found", Quote: "`NOT_FOUND`"}},

	// §6.3: DeleteMachine.
	"R-6.3-required":                {{Name: "implemented", Quote: "REQUIRED."}},
	"R-6.3.3-idempotent":            {{Name: "repeat", Quote: "DeleteMachine MUST be idempotent"}},
	"R-6.3.3-only-that-provider-id": {{Name: "not-other", Quote: "MUST NOT delete a VM with another provider ID"}},
	"R-6.3.3-compares-finds-vm-recorded": {
		{Name: "kept", Quote: "MUST NOT delete it", Unbroken: "a driver that does not compare may delete that VM, so a deleted VM does not tell the suite that the driver compared"},
		{Name: "ok", Quote: "answers `OK`"},
	},
	"R-6.3.3-no-provider-id-by-name": {{Name: "by-name", Quote: "Every VM of the Machine, found by `machine.namespace` and `machine.name`"}},
	"R-6.3.3-gone-after-ok": {
		{Name: "status", Quote: "MUST treat the VM as gone: `GetMachineStatus` for the Machine answers `NOT_FOUND`"},
		{Name: "create", Quote: "`CreateMachine` for the same name creates a new VM"},
	},
	"R-6.3.4-gone-answers-ok": {{Name: "ok", Quote: "the driver MUST answer OK; it MUST NOT answer `NOT_FOUND`"}},

	// §6.4: GetMachineStatus.
	"R-6.4.1-vm-looked-up-machine":  {{Name: "class-name", Quote: "whatever `machine_class.name` says"}, {Name: "provider-id", Quote: "the VM MUST also have that provider ID", Unbroken: "the check reports it as R-6.4.3-lookup-one-vm#mismatch"}},
	"R-6.4.2-needs-init-capability": {{Name: "capability", Quote: "Only a driver that advertises `TYPE_INITIALIZE_MACHINE` sets it"}},
	"R-6.4.3-lookup-no-vm":          {{Name: "not-found", Quote: "No VM of the Machine"}},
	"R-6.4.3-lookup-one-vm": {
		{Name: "ok", Quote: "`OK` if its provider ID equals `machine.provider_id`"},
		{Name: "mismatch", Quote: "else `NOT_FOUND`"},
	},
	"R-6.4.3-lookup-deleted": {{Name: "deleted", Quote: "The VM was deleted"}},

	// §6.5: ListMachines.
	"R-6.5.2-every-vm-once": {{Name: "every", Quote: "Every VM of the class"}, {Name: "once", Quote: "once each"}},
	"R-6.5.3-only-class-vms": {
		{Name: "namespace", Quote: "MUST list only VMs that it created through `CreateMachine` for a Machine of a class with this `machine_class.namespace`"},
		{Name: "name", Quote: "and `machine_class.name`"},
	},

	// §6.6: GetVolumeIDs.
	"R-6.6.2-own-volumes-only":     {{Name: "left-out", Quote: "Volumes that are not the provider's are left out"}},
	"R-6.6.3-one-entry-per-volume": {{Name: "once", Quote: "At most one entry per requested volume"}},
	"R-6.6.4-invalid-argument-volumes": {
		{Name: "empty", Quote: "`volumes` empty"},
		{Name: "no-name", Quote: "a volume without `name`"},
	},
	"R-6.6.4-invalid-argument-naming": {
		{Name: "not-json", Quote: "A `spec` that is not valid JSON"},
		{Name: "not-object", Quote: "is JSON but not an object"},
		{Name: "names-field", Quote: "(naming `volumes[i].spec`)"},
		{Name: "not-skipped", Quote: "a driver MUST NOT map or skip such a volume silently"},
	},

	// §6.7: UpdateMachine.
	"R-6.7.2-exactly-one-result":        {{Name: "one", Quote: "Exactly one of `applied` and `needs_new_vm` is set"}},
	"R-6.7.2-applied-provider-id-equal": {{Name: "equal", Quote: "`applied.provider_id` MUST equal `machine.provider_id`"}},
	"R-6.7.2-reason-set": {
		{Name: "required", Quote: "(REQUIRED"},
		{Name: "bound", Quote: "at most 1024 bytes"},
		{Name: "no-secret", Quote: "never a secret value", Unbroken: "the check reports a secret in the reason as R-8.3-not-put-secret-values#other-fields"},
	},
	"R-6.7.3-applied-keeps-vm": {{Name: "kept", Quote: "MUST NOT replace the VM to do so"}},
	"R-6.7.3-applied-matches-new-class": {
		{Name: "create", Quote: "a `CreateMachine` for the machine with `machine_class` MUST answer `OK` with the same VM"},
		{Name: "status", Quote: "`GetMachineStatus` and"},
		{Name: "list", Quote: "`ListMachines` MUST keep finding it"},
	},
	"R-6.7.3-needs-new-vm-untouched": {{Name: "unchanged", Quote: "the driver MUST change nothing"}},
	"R-6.7.3-needs-new-vm-not-error": {{Name: "answer", Quote: "it MUST NOT be given as an error code"}},
	"R-6.7.3-no-partial-change":      {{Name: "none", Quote: "MUST NOT apply part of a change and then answer `needs_new_vm`"}},
	"R-6.7.3-idempotent":             {{Name: "repeat", Quote: "UpdateMachine MUST be idempotent"}},
	"R-6.7.3-only-that-provider-id":  {{Name: "not-other", Quote: "MUST NOT update a VM with another provider ID"}},
	"R-6.7.3-no-disruption":          {{Name: "kept", Quote: "MUST NOT delete, recreate or reboot the VM"}},

	// §7: errors.
	"R-7.1-failed-call-carry-non-ok": {{Name: "shape", Quote: "MUST carry a non-OK canonical gRPC code ([§7.2](#s7-2)) and MUST NOT carry a response message"}},
	"R-7.2-aborted":                  {{Name: "same-machine", Quote: "`ABORTED`"}},
	"R-7.2-unavailable":              {{Name: "transient", Quote: "`UNAVAILABLE`"}},

	// §8, §9, §10: secrets, concurrency, deadlines.
	"R-8.3-not-put-secret-values": {
		{Name: "errors", Quote: "MUST NOT put secret values into error messages"},
		{Name: "other-fields", Quote: "or any other response field"},
	},
	"R-9-thread-safe":               {{Name: "concurrent", Quote: "MUST be safe for concurrent calls"}},
	"R-9-handle-safely-may-answer":  {{Name: "safe", Quote: "MUST handle this safely"}},
	"R-9-not-run-two-creations":     {{Name: "creations", Quote: "MUST NOT run two creations"}},
	"R-10.2-end-call-deadline-own":  {{Name: "by-deadline", Quote: "MUST end every call by its deadline"}},
	"R-10.2-next-call-same-machine": {{Name: "picked-up", Quote: "MUST pick that operation up"}},
}
