package conformance

import (
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// TestInfo describes one test of the suite.
type TestInfo struct {
	// Name is "Group/test", e.g. "CreateMachine/idempotent"; --focus and
	// --skip match it.
	Name string `json:"name"`
	// Section is the section of docs/driver-api.md the test checks.
	Section string `json:"section"`
	// Capability is CapabilityRequired or the capability the test needs.
	Capability string `json:"capability"`
	// Checks says in one sentence what the test checks.
	Checks string `json:"checks"`
}

// testCase is a TestInfo with the capability as a value and the function.
type testCase struct {
	TestInfo
	capability driverv1alpha1.Capability_Type
	run        func(s *suite, t T)
}

const (
	capNone = driverv1alpha1.Capability_TYPE_UNSPECIFIED
	capInit = driverv1alpha1.Capability_TYPE_INITIALIZE_MACHINE
	capList = driverv1alpha1.Capability_TYPE_LIST_MACHINES
	capVols = driverv1alpha1.Capability_TYPE_GET_VOLUME_IDS
	capUpd  = driverv1alpha1.Capability_TYPE_UPDATE_MACHINE
)

// suiteTests lists the tests in the order they run. The shared VM (see
// suite.fixture) is created by the first test that needs it and deleted by
// the last test.
func suiteTests() []testCase {
	tc := func(name, section string, c driverv1alpha1.Capability_Type, checks string, run func(*suite, T)) testCase {
		capName := CapabilityRequired
		if c != capNone {
			capName = c.String()
		}
		return testCase{TestInfo{name, section, capName, checks}, c, run}
	}
	return []testCase{
		tc("Transport/socket_permissions", "§2.2", capNone,
			"the Unix socket has no permissions for group and others and a path of at most 107 bytes (skipped for TCP or when the socket is not visible)", testSocketPermissions),
		tc("Transport/several_connections", "§2.6", capNone,
			"a VM created on one connection is found and deleted on another", testConnections),

		tc("Identity/plugin_name", "§5.1.2", capNone,
			"GetPluginInfo.name is at most 63 characters of [a-z0-9.-], starting and ending with an alphanumeric", testPluginName),
		tc("Identity/vendor_version", "§5.1.2", capNone,
			"GetPluginInfo.vendor_version is a semantic version (optional leading v) of at most 128 bytes", testVendorVersion),
		tc("Identity/manifest", "§5.1.2", capNone,
			"GetPluginInfo.manifest has at most 16 entries, keys and values at most 128 bytes", testManifest),
		tc("Identity/providers", "§5.1.2", capNone,
			"GetPluginInfo.providers are 1 to 63 bytes each, none listed twice", testProviders),
		tc("Identity/known_capabilities", "§3.4", capNone,
			"GetPluginCapabilities never lists TYPE_UNSPECIFIED; values this suite does not know are logged, not failed", testKnownCapabilities),
		tc("Identity/probe", "§5.3", capNone,
			"Probe answers OK within 5 seconds, repeatedly", testProbe),
		tc("Identity/stable_answers", "§2.7", capNone,
			"GetPluginInfo and GetPluginCapabilities answer as at the start of the run", testStableIdentity),
		tc("Capabilities/unadvertised_rpcs_unimplemented", "§3.5", capNone,
			"every OPTIONAL RPC whose capability is not advertised answers UNIMPLEMENTED to a well-formed request", testUnadvertisedUnimplemented),
		tc("Capabilities/advertised_rpcs_implemented", "§3.5", capNone,
			"every OPTIONAL RPC whose capability is advertised answers something other than UNIMPLEMENTED", testAdvertisedImplemented),
		tc("Compatibility/unknown_fields", "§3.2", capNone,
			"requests of every RPC with a field of a later revision, at the top and in nested messages, are served as without it", testUnknownFields),
		tc("Compatibility/unknown_metadata", "§2.4", capNone,
			"calls with metadata the driver does not know, and without any, are served", testMetadata),
		tc("Compatibility/optional_fields_unset", "§4.1", capNone,
			"a machine is created, found and deleted with every OPTIONAL field of Machine and MachineClass unset and no user data", testOptionalUnset),

		tc("CreateMachine/invalid_arguments", "§4.1", capNone,
			"each missing REQUIRED field, and a provider_spec that is no JSON object, answers INVALID_ARGUMENT naming the field path", testCreateInvalidArguments),
		tc("CreateMachine/success", "§6.1.2", capNone,
			"a new machine gets a VM: OK with a provider ID (at most 2048 bytes) and a DNS-1123 node name", testCreateSuccess),
		tc("CreateMachine/idempotent", "§6.1.3", capNone,
			"repeating the call (with another uid, annotations and user_data; with and without last_known_state) returns the same provider ID and node name and leaves exactly one VM", testCreateIdempotent),
		tc("CreateMachine/incompatible_repeat", "§6.1.3", capNone,
			"the same name with an incompatible provider_spec answers ALREADY_EXISTS and keeps the existing VM unchanged: a repeat with its own provider_spec answers OK with it", testCreateIncompatible),
		tc("CreateMachine/ignored_fields", "§6.1.3", capNone,
			"repeating the call with only another uid, other labels and annotations, other user_data, or no last_known_state returns the same VM", testIgnoredFields),
		tc("CreateMachine/longest_name", "§4.3", capNone,
			"a machine name of 253 characters is created, found (and its 252-character prefix is not) and deleted by name", testLongestName),
		tc("CreateMachine/other_namespace", "§6.1.3", capNone,
			"the shared machine's name in another namespace is not found, its DeleteMachine leaves the shared VM, and its CreateMachine creates another VM or answers ALREADY_EXISTS", testOtherNamespace),
		tc("CreateMachine/last_known_state", "§4.7", capNone,
			"the last_known_state the driver returns is accepted back by CreateMachine and DeleteMachine, and a repeat without it finds the same VM", testCreateLastKnownState),
		tc("CreateMachine/timed_out_create_retried", "§10.2", capNone,
			"a CreateMachine cut short by a short deadline, retried with the same name (ABORTED meaning in flight), completes with exactly one VM", testCreateTimedOutRetried),

		tc("GetMachineStatus/matches_create", "§6.4.3", capNone,
			"looked up by name, with and without provider_id, the VM has the provider ID and node name CreateMachine returned", testStatusMatchesCreate),
		tc("GetMachineStatus/unknown_machine", "§6.4.3", capNone,
			"a machine that never existed answers NOT_FOUND", testStatusUnknown),
		tc("GetMachineStatus/provider_id_mismatch", "§6.4.3", capNone,
			"an existing name with a provider_id its VM does not have answers NOT_FOUND", testStatusProviderIDMismatch),
		tc("GetMachineStatus/other_class_name", "§6.4.1", capNone,
			"the shared VM is found, with and without provider_id, when the request names another class with the same provider spec", testStatusOtherClassName),
		tc("GetMachineStatus/invalid_arguments", "§4.1", capNone,
			"a missing machine, machine.name or machine_class answers INVALID_ARGUMENT naming the field", testStatusInvalidArguments),

		tc("InitializeMachine/initializes", "§6.2.3", capInit,
			"InitializeMachine of a new VM answers OK (repeatedly) with its provider ID and, on every repeat, the node name of the first answer, and the VM no longer needs initialization", testInitialize),
		tc("InitializeMachine/unknown_vm", "§6.2.4", capInit,
			"InitializeMachine of a machine that never existed, or with a provider ID its VM does not have, answers NOT_FOUND", testInitializeUnknown),
		tc("InitializeMachine/invalid_arguments", "§4.1", capInit,
			"a missing machine, machine.name, machine.provider_id or machine_class answers INVALID_ARGUMENT naming the field", testInitializeInvalidArguments),
		tc("UpdateMachine/applies_in_place", "§6.7.3", capUpd,
			"UpdateMachine to the updated provider spec answers applied (repeatedly) with the VM's provider ID and node name, and the VM then matches the new class (skipped without --updated-provider-spec)", testUpdateApplies),
		tc("UpdateMachine/needs_new_vm", "§6.7.3", capUpd,
			"UpdateMachine to a provider spec the VM cannot take answers OK with needs_new_vm and a reason (repeatedly), and the VM still matches the old class", testUpdateNeedsNewVM),
		tc("UpdateMachine/unknown_vm", "§6.7.3", capUpd,
			"UpdateMachine of a machine that never existed, or with a provider ID its VM does not have, answers NOT_FOUND and changes no VM", testUpdateUnknown),
		tc("UpdateMachine/no_partial_change", "§6.7.3", capUpd,
			"UpdateMachine to a spec with a difference the VM can take and one it cannot answers needs_new_vm (repeatedly) and applies neither (skipped without --updated-provider-spec)", testUpdateNoPartialChange),
		tc("UpdateMachine/deleted_vm_id", "§6.7.3", capUpd,
			"UpdateMachine with the provider ID of a deleted VM, while a new VM of the name exists, answers NOT_FOUND and leaves the new VM alone", testUpdateDeletedVM),
		tc("UpdateMachine/in_parallel", "§9", capUpd,
			"three or more machines of the class updated at once each answer as alone, never ABORTED", testUpdateInParallel),
		tc("UpdateMachine/invalid_arguments", "§4.1", capUpd,
			"a missing machine, machine.provider_id, machine_class or old_machine_class answers INVALID_ARGUMENT naming the field", testUpdateInvalidArguments),

		tc("ListMachines/contains_created", "§6.5.3", capList,
			"the VMs the suite created are listed once each with their provider IDs; VMs outside the name prefix are ignored", testListContains),
		tc("ListMachines/scoped_to_class", "§6.5.3", capList,
			"listing another class name, or the same class name in another namespace, lists none of the suite's VMs", testListScope),
		tc("ListMachines/invalid_arguments", "§4.1", capList,
			"a missing machine_class, machine_class.name or machine_class.namespace answers INVALID_ARGUMENT naming the field", testListInvalidArguments),

		tc("DeleteMachine/removes_vm", "§6.3.3", capNone,
			"DeleteMachine with the orphan collector's request (name, namespace, provider_id) answers OK, then GetMachineStatus answers NOT_FOUND", testDeleteRemoves),
		tc("DeleteMachine/idempotent", "§6.3.3", capNone,
			"repeating DeleteMachine of a deleted VM answers OK", testDeleteIdempotent),
		tc("DeleteMachine/by_name_only", "§6.3.3", capNone,
			"DeleteMachine without provider_id and last_known_state deletes the VM found by name", testDeleteByName),
		tc("DeleteMachine/other_provider_id_kept", "§6.3.3", capNone,
			"DeleteMachine with a provider_id the machine's VM does not have answers OK and leaves that VM alone", testDeleteOtherProviderID),
		tc("DeleteMachine/recreate_after_delete", "§6.3.3", capNone,
			"CreateMachine of a deleted machine's name creates a new VM with a new provider ID", testRecreateAfterDelete),
		tc("DeleteMachine/provider_id_of_another_machine", "§6.3.3", capNone,
			"DeleteMachine of one name with the provider ID of another machine's VM answers OK (the VM may be deleted or kept)", testDeleteOtherMachinesVM),
		tc("DeleteMachine/unknown_machine", "§6.3.3", capNone,
			"DeleteMachine of a machine that never existed answers OK", testDeleteUnknown),
		tc("DeleteMachine/invalid_arguments", "§4.1", capNone,
			"a missing machine, machine.name or machine_class answers INVALID_ARGUMENT naming the field", testDeleteInvalidArguments),

		tc("GetVolumeIDs/fixtures", "§6.6.3", capVols,
			"the configured CSI and in-tree volumes map to the configured IDs; volumes marked notMine are left out", testVolumeFixtures),
		tc("GetVolumeIDs/response_shape", "§6.6.2", capVols,
			"the answer names only requested volumes, at most once each, with a volume ID of at most 1024 bytes, and leaves out volumes of no provider", testVolumeResponseShape),
		tc("GetVolumeIDs/invalid_arguments", "§6.6.4", capVols,
			"no volumes, or a volume without name or spec or with a spec that is not JSON, answers INVALID_ARGUMENT naming volumes[i]", testVolumeInvalidArguments),
		tc("GetVolumeIDs/largest_request", "§2.5", capVols,
			"a request with 1024 volumes of almost 4 MiB in all answers OK, naming only requested volumes", testLargestRequest),

		tc("Secrets/canary_not_echoed", "§8.3", capNone,
			"errors provoked while a canary value travels in secrets and user_data never carry it; no response of the whole run carries it either", testCanaryNotEchoed),
		tc("Secrets/each_key_missing", "§4.5", capNone,
			"leaving out one configured secret key at a time answers OK or INVALID_ARGUMENT naming that key", testEachKeyMissing),
		tc("Deadlines/answered_by_deadline", "§10.2", capNone,
			"Probe, CreateMachine, GetMachineStatus, ListMachines, GetVolumeIDs and DeleteMachine sent with a short deadline are answered by the deadline plus a grace period", testDeadlines),
		tc("Concurrency/distinct_machines_in_parallel", "§9", capNone,
			"distinct machines are created, looked up and deleted in parallel, with distinct provider IDs", testConcurrency),
		tc("Concurrency/same_machine", "§9", capNone,
			"CreateMachine of one machine from several callers at once answers OK with one provider ID or ABORTED, and leaves one VM", testSameMachine),
		tc("Identity/stable_to_the_end", "§2.7", capNone,
			"GetPluginInfo, GetPluginCapabilities and the shared VM's provider ID and node name, sampled before every check and read again at the end, never change", testStableToTheEnd),
		tc("Cleanup/no_vm_left_behind", "§6.3.3", capNone,
			"at the end every VM of the run, and every VM ListMachines still lists within the name prefix, is deleted with OK", testNoVMLeftBehind),

		// Launcher mode only (Config.Launch, --driver-command); skipped
		// otherwise. Their breaches are warnings for now (rules.go).
		tc("Launcher/endpoint_precedence", "§2.1", capNone,
			"started with the endpoint as --endpoint, as MACHINA_DRIVER_ENDPOINT, and as both, the driver listens where the flag, else the variable says (and on the default with neither, if enabled)", testLaunchEndpointPrecedence),
		tc("Launcher/stale_socket_removed", "§2.2", capNone,
			"started where a socket nobody serves is left over, the driver removes it and serves", testLaunchStaleSocket),
		tc("Launcher/live_socket_refused", "§2.2", capNone,
			"started where another process serves the socket, the driver exits non-zero and leaves that socket (a SHOULD: warns)", testLaunchLiveSocket),
		tc("Launcher/non_socket_refused", "§2.2", capNone,
			"started where a regular file, a directory or a symbolic link is at the path, the driver exits non-zero and keeps it", testLaunchNonSocket),
		tc("Launcher/bad_endpoint_refused", "§2.1", capNone,
			"started with an endpoint of another scheme, or a unix:// endpoint with a relative path, the driver exits non-zero with a message naming it", testLaunchBadEndpoint),
		tc("Launcher/long_path_refused", "§2.2", capNone,
			"started on a socket path over 107 bytes, the driver exits non-zero with a message naming the path (a SHOULD: warns)", testLaunchLongPath),
		tc("Launcher/no_other_files", "§2.2", capNone,
			"while it serves and after it stopped, the driver has created nothing but its socket in the socket's directory", testLaunchNoOtherFiles),
		tc("Launcher/no_tcp_listener", "§2.3", capNone,
			"given a unix:// endpoint, the driver serves the Driver API on no TCP port, neither beside its socket nor instead of it when a regular file is at the path (Linux only)", testLaunchNoTCP),
		tc("Launcher/socket_directory_modes", "§2.2", capNone,
			"a missing socket directory is created with no permissions for others; an existing one (0755) keeps its mode", testLaunchDirectories),
		tc("Launcher/socket_mode_at_first_answer", "§2.2", capNone,
			"started with umask 022, the driver's socket has no permissions for group and others when it answers its first call", testLaunchSocketMode),
		tc("Launcher/sigterm_graceful_stop", "§2.7", capNone,
			"on SIGTERM a CreateMachine in flight answers OK, the driver exits with status 0 within the grace period and its socket is gone", testLaunchSIGTERM),
		tc("Launcher/restart_keeps_state", "§2.7", capNone,
			"a driver stopped and started again on the same socket finds a VM created before with its provider ID (or lost it with its memory), and never creates a second", testLaunchRestart),
	}
}

// Tests lists the suite's tests in the order they run.
func Tests() []TestInfo {
	cases := suiteTests()
	out := make([]TestInfo, len(cases))
	for i, c := range cases {
		out[i] = c.TestInfo
	}
	return out
}
