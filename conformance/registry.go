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
		tc("Identity/plugin_name", "§5", capNone,
			"GetPluginInfo.name is at most 63 characters of [a-z0-9.-], starting and ending with an alphanumeric", testPluginName),
		tc("Identity/vendor_version", "§5", capNone,
			"GetPluginInfo.vendor_version is a semantic version with an optional leading v", testVendorVersion),
		tc("Identity/manifest", "§5", capNone,
			"GetPluginInfo.manifest has at most 16 entries, keys and values at most 128 bytes", testManifest),
		tc("Identity/known_capabilities", "§3", capNone,
			"GetPluginCapabilities lists only Capability.Type values of v1alpha1", testKnownCapabilities),
		tc("Identity/probe", "§5", capNone,
			"Probe answers OK and stays ready", testProbe),
		tc("Capabilities/unadvertised_rpcs_unimplemented", "§3", capNone,
			"every OPTIONAL RPC whose capability is not advertised answers UNIMPLEMENTED to a well-formed request", testUnadvertisedUnimplemented),
		tc("Capabilities/advertised_rpcs_implemented", "§3", capNone,
			"every OPTIONAL RPC whose capability is advertised answers something other than UNIMPLEMENTED", testAdvertisedImplemented),

		tc("CreateMachine/invalid_arguments", "§4", capNone,
			"each missing or invalid REQUIRED field and each size limit answers INVALID_ARGUMENT naming the field, and no VM is created", testCreateInvalidArguments),
		tc("CreateMachine/success", "§6.1", capNone,
			"a new machine gets a VM: OK with a provider ID (at most 2048 bytes) and a DNS-1123 node name", testCreateSuccess),
		tc("CreateMachine/idempotent", "§6.1", capNone,
			"repeating the call (with and without last_known_state) returns the same provider ID and node name and leaves exactly one VM", testCreateIdempotent),
		tc("CreateMachine/incompatible_repeat", "§6.1", capNone,
			"the same name with an incompatible provider_spec answers ALREADY_EXISTS and keeps the existing VM", testCreateIncompatible),
		tc("CreateMachine/last_known_state", "§6.1", capNone,
			"the last_known_state the driver returns is accepted back by CreateMachine and DeleteMachine", testCreateLastKnownState),

		tc("GetMachineStatus/matches_create", "§6.4", capNone,
			"looked up by name, with and without provider_id, the VM has the provider ID and node name CreateMachine returned", testStatusMatchesCreate),
		tc("GetMachineStatus/unknown_machine", "§6.4", capNone,
			"a machine that never existed answers NOT_FOUND", testStatusUnknown),
		tc("GetMachineStatus/provider_id_mismatch", "§6.4", capNone,
			"an existing name with a provider_id its VM does not have answers NOT_FOUND", testStatusProviderIDMismatch),
		tc("GetMachineStatus/invalid_arguments", "§4", capNone,
			"a missing machine, machine.name or machine_class answers INVALID_ARGUMENT naming the field", testStatusInvalidArguments),

		tc("InitializeMachine/initializes", "§6.2", capInit,
			"InitializeMachine of a new VM answers OK (repeatedly) with its provider ID, and the VM no longer needs initialization", testInitialize),
		tc("InitializeMachine/unknown_machine", "§6.2", capInit,
			"InitializeMachine of a machine that never existed answers NOT_FOUND", testInitializeUnknown),
		tc("InitializeMachine/invalid_arguments", "§4", capInit,
			"a missing machine, machine.name, machine.provider_id or machine_class answers INVALID_ARGUMENT naming the field", testInitializeInvalidArguments),

		tc("ListMachines/contains_created", "§6.5", capList,
			"the VMs the suite created are listed once each with their provider IDs, and no deleted one is; other VMs are ignored", testListContains),
		tc("ListMachines/invalid_arguments", "§4", capList,
			"a missing machine_class answers INVALID_ARGUMENT naming the field", testListInvalidArguments),

		tc("DeleteMachine/removes_vm", "§6.3", capNone,
			"after DeleteMachine answers OK, GetMachineStatus answers NOT_FOUND and ListMachines no longer lists the VM", testDeleteRemoves),
		tc("DeleteMachine/idempotent", "§6.3", capNone,
			"repeating DeleteMachine of a deleted VM answers OK", testDeleteIdempotent),
		tc("DeleteMachine/by_name_only", "§6.3", capNone,
			"DeleteMachine without provider_id and last_known_state finds the VM by name and deletes it", testDeleteByName),
		tc("DeleteMachine/unknown_machine", "§6.3", capNone,
			"DeleteMachine of a machine that never existed answers OK", testDeleteUnknown),
		tc("DeleteMachine/invalid_arguments", "§4", capNone,
			"a missing machine, machine.name or machine_class answers INVALID_ARGUMENT naming the field", testDeleteInvalidArguments),

		tc("GetVolumeIDs/fixtures", "§6.6", capVols,
			"the configured CSI and in-tree volumes map to the configured IDs; volumes marked notMine are left out", testVolumeFixtures),
		tc("GetVolumeIDs/response_shape", "§6.6", capVols,
			"the answer names only requested volumes, once each, with a volume ID, and leaves out volumes of no provider", testVolumeResponseShape),
		tc("GetVolumeIDs/invalid_arguments", "§4", capVols,
			"no volumes, a volume without a name, or more than 1024 volumes answer INVALID_ARGUMENT", testVolumeInvalidArguments),

		tc("Secrets/canary_not_echoed", "§8", capNone,
			"errors provoked while a canary value travels in secrets and user_data never carry it (every call of the suite is checked too)", testCanaryNotEchoed),
		tc("Deadlines/answered_in_time", "§10", capNone,
			"calls sent with a short deadline are answered by the deadline plus a grace period; a CreateMachine cut short succeeds when retried, with one VM", testDeadlines),
		tc("Concurrency/distinct_machines_in_parallel", "§9", capNone,
			"distinct machines are created, looked up and deleted in parallel, with distinct provider IDs", testConcurrency),
		tc("Cleanup/no_vm_left_behind", "§6.3", capNone,
			"at the end every VM of the run is deleted and ListMachines lists none within the name prefix", testNoVMLeftBehind),
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
