package conformance_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/machina-io/machina/conformance"
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// refVolumes are GetVolumeIDs fixtures for refDriver: a CSI and an in-tree
// volume of its own, and a CSI and an NFS volume of someone else.
var refVolumes = []conformance.VolumeFixture{
	{Name: "pv-csi-mine", VolumeID: "vol-csi-1",
		Spec: json.RawMessage(`{"csi":{"driver":"` + refCSIDriver + `","volumeHandle":"vol-csi-1"}}`)},
	{Name: "pv-ebs-mine", VolumeID: "vol-0abc",
		Spec: json.RawMessage(`{"awsElasticBlockStore":{"volumeID":"aws://eu-west-1a/vol-0abc","fsType":"ext4"}}`)},
	{Name: "pv-csi-other", NotMine: true,
		Spec: json.RawMessage(`{"csi":{"driver":"other.csi.example","volumeHandle":"vol-csi-2"}}`)},
	{Name: "pv-nfs", NotMine: true,
		Spec: json.RawMessage(`{"nfs":{"server":"nfs.example","path":"/x"}}`)},
}

// refConfig is the suite configuration for refDriver, with timeouts short
// enough for a test yet generous for a loaded machine.
func refConfig(endpoint string) conformance.Config {
	return conformance.Config{
		Endpoint: endpoint,
		MachineClass: conformance.MachineClass{
			Name: "reference", Provider: "reference",
			ProviderSpec: json.RawMessage(`{"size":"small","zone":"z1"}`),
		},
		Secrets:         map[string][]byte{"token": []byte("s3cr3t-token-value")},
		UserData:        []byte("#cloud-config\n"),
		NamePrefix:      "selftest-",
		IdempotentCount: 3,
		Concurrency:     4,
		Volumes:         refVolumes,
		Timeouts: conformance.Timeouts{
			Identity: 5 * time.Second, Ready: 5 * time.Second,
			Create: 10 * time.Second, Initialize: 10 * time.Second, Delete: 10 * time.Second,
			Status: 5 * time.Second, List: 5 * time.Second, VolumeIDs: 5 * time.Second,
		},
		ShortDeadline: 300 * time.Millisecond,
		DeadlineGrace: 1200 * time.Millisecond,
	}
}

// runAgainst serves d and runs the whole suite against it with the internal
// runner.
func runAgainst(t *testing.T, d *refDriver) *conformance.Report {
	t.Helper()
	endpoint := serveRef(t, d)
	r := &conformance.Runner{}
	if testing.Verbose() {
		// `go test -v` shows the suite's own progress lines.
		r.Progress, r.Verbose = testWriter{t}, true
	}
	rep := r.Run(context.Background(), refConfig(endpoint))
	require.NotNil(t, rep.Driver, "the suite must reach the driver: %v", rep.SuiteFailures)
	return rep
}

// testWriter sends progress lines to t.Log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// summary renders a report for a failure message.
func summary(rep *conformance.Report) string {
	var b strings.Builder
	rep.WriteSummary(&b)
	return b.String()
}

func TestSuitePassesCorrectDriver(t *testing.T) {
	for _, tc := range []struct {
		name string
		caps []driverv1alpha1.Capability_Type
		// unavailableEvery makes every n-th call UNAVAILABLE (see refDriver).
		unavailableEvery int
		// skipped are the tests that must skip with these capabilities.
		skipped []string
	}{
		{"all capabilities", allCaps, 0, []string{"Capabilities/unadvertised_rpcs_unimplemented"}},
		{"throttled now and then", allCaps, 3, []string{"Capabilities/unadvertised_rpcs_unimplemented"}},
		{"no optional capability", nil, 0, []string{
			"Capabilities/advertised_rpcs_implemented",
			"InitializeMachine/initializes", "InitializeMachine/unknown_vm", "InitializeMachine/invalid_arguments",
			"ListMachines/contains_created", "ListMachines/scoped_to_class", "ListMachines/invalid_arguments",
			"GetVolumeIDs/fixtures", "GetVolumeIDs/response_shape", "GetVolumeIDs/invalid_arguments",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := newRefDriver(tc.caps, breakage{})
			d.unavailableEvery = tc.unavailableEvery
			rep := runAgainst(t, d)
			require.True(t, rep.Passed(), summary(rep))
			require.Len(t, rep.Tests, len(conformance.Tests()), "every test runs")
			var skipped []string
			for _, r := range rep.Tests {
				if r.Status == conformance.StatusSkipped {
					skipped = append(skipped, r.Name)
				}
			}
			assert.ElementsMatch(t, tc.skipped, skipped)
			assert.Empty(t, d.liveVMs(), "the suite deletes every VM it created")
		})
	}
}

// TestSuiteCatchesBrokenDrivers runs the suite against refDriver with one
// contract violation at a time and checks that the test for that rule fails
// with a message naming the rule and its section.
func TestSuiteCatchesBrokenDrivers(t *testing.T) {
	for _, tc := range []struct {
		name string
		caps []driverv1alpha1.Capability_Type // nil means allCaps
		b    breakage
		test string // the test that must fail
		want string // a message of that test must contain this
	}{
		{"socket open to all", nil, breakage{socketOpenToAll: true},
			"Transport/socket_permissions", "§2.2 the socket file has mode 0600 (no access for group and others): the socket /"},
		{"state tied to a connection", nil, breakage{connectionState: true},
			"Transport/several_connections", "§2.6 a driver accepts several connections and ties no state to one: GetMachineStatus of selftest-"},
		{"identity changes", nil, breakage{unstableIdentity: true},
			"Identity/stable_answers", "§2.7 GetPluginInfo and GetPluginCapabilities answer the same for the life of the process: GetPluginInfo answered"},
		{"bad plugin name", nil, breakage{badPluginName: true},
			"Identity/plugin_name", `§5.1.2 GetPluginInfo.name is at most 63 characters of [a-z0-9.-], starting and ending with an alphanumeric: the name "Reference_Driver"`},
		{"bad vendor version", nil, breakage{badVersion: true},
			"Identity/vendor_version", `§5.1.2 GetPluginInfo.vendor_version is a semantic version of at most 128 bytes, optionally with a leading v: the vendor_version "latest"`},
		{"TYPE_UNSPECIFIED advertised", nil, breakage{unknownCapability: true},
			"Identity/known_capabilities", "§3.4 capabilities are Capability.Type values of v1alpha1 (never TYPE_UNSPECIFIED): capabilities[3] is TYPE_UNSPECIFIED"},
		{"capability advertised but unimplemented", nil, breakage{advertisedButUnimplemented: true},
			"Capabilities/advertised_rpcs_implemented", "§3.5 an OPTIONAL RPC whose capability is advertised is implemented: ListMachines answered UNIMPLEMENTED"},
		{"unadvertised RPC implemented", []driverv1alpha1.Capability_Type{driverv1alpha1.Capability_TYPE_LIST_MACHINES}, breakage{unadvertisedImplemented: true},
			"Capabilities/unadvertised_rpcs_unimplemented", "§3.5 an OPTIONAL RPC whose capability is not advertised answers UNIMPLEMENTED: GetVolumeIDs (not advertised: TYPE_GET_VOLUME_IDS) answered OK, want UNIMPLEMENTED"},
		{"wrong code for a missing name", nil, breakage{internalForMissingName: true},
			"CreateMachine/invalid_arguments", "§4.1 a missing or malformed REQUIRED field answers INVALID_ARGUMENT naming the field path: CreateMachine with machine.name missing answered INTERNAL"},
		{"field not named", nil, breakage{fieldNotNamed: true},
			"CreateMachine/invalid_arguments", `does not name the field machine_class.provider_spec`},
		{"class namespace not required", nil, breakage{classNamespaceIgnored: true},
			"CreateMachine/invalid_arguments", "CreateMachine with machine class.namespace missing answered OK, want INVALID_ARGUMENT"},
		{"new provider ID on each create", nil, breakage{newProviderIDEachCreate: true},
			"CreateMachine/idempotent", "§6.1.3 CreateMachine is idempotent on machine.name: call #2 returned provider ID"},
		{"second VM on a repeated create", nil, breakage{secondVMOnRepeat: true},
			"CreateMachine/idempotent", "§6.1.3 repeated CreateMachine calls leave exactly one VM: ListMachines lists 4 VMs"},
		{"user data compared", nil, breakage{userDataCompared: true},
			"CreateMachine/idempotent", "(with another uid, annotations and user_data; last_known_state sent) answered ALREADY_EXISTS"},
		{"incompatible create accepted", nil, breakage{incompatibleAccepted: true},
			"CreateMachine/incompatible_repeat", "§6.1.3 CreateMachine with an incompatible provider_spec for an existing VM answers ALREADY_EXISTS and keeps the VM: the call answered OK"},
		{"last_known_state rejected", nil, breakage{lastKnownStateRejected: true},
			"CreateMachine/last_known_state", "§4.7 last_known_state is accepted back and the driver does not depend on it: a repeated CreateMachine carrying the last_known_state the driver returned answered INVALID_ARGUMENT"},
		{"depends on last_known_state", nil, breakage{dependsOnLastKnownState: true},
			"CreateMachine/last_known_state", "a repeated CreateMachine without last_known_state returned provider ID"},
		{"secret in last_known_state", nil, breakage{secretInState: true},
			"CreateMachine/success", "§8.3 secret values never appear in error messages or response fields: the CreateMachine response contains the canary"},
		{"timed-out create makes a second VM", nil, breakage{deadlineIgnored: true, dependsOnLastKnownState: true},
			"CreateMachine/timed_out_create_retried", "§10.2 a CreateMachine cut short by its deadline and retried with the same name completes without a second VM: ListMachines lists 2 VMs"},
		{"status ignores provider_id", nil, breakage{statusIgnoresProviderID: true},
			"GetMachineStatus/provider_id_mismatch", "§6.4.3 GetMachineStatus with a provider_id the VM does not have answers NOT_FOUND"},
		{"status of unknown machine INTERNAL", nil, breakage{statusUnknownInternal: true},
			"GetMachineStatus/unknown_machine", "§6.4.3 GetMachineStatus of an unknown machine answers NOT_FOUND: GetMachineStatus of selftest-"},
		{"status after delete still OK", nil, breakage{statusAfterDeleteOK: true},
			"DeleteMachine/removes_vm", "§6.3.3 after DeleteMachine answered OK the VM is gone: after DeleteMachine answered OK, GetMachineStatus of selftest-"},
		{"delete of unknown VM NOT_FOUND", nil, breakage{deleteUnknownNotFound: true},
			"DeleteMachine/unknown_machine", "§6.3.3 DeleteMachine of a machine that never existed answers OK: DeleteMachine of selftest-"},
		{"repeated delete NOT_FOUND", nil, breakage{deleteUnknownNotFound: true},
			"DeleteMachine/idempotent", "§6.3.3 DeleteMachine of a VM that is gone answers OK: DeleteMachine #2 of the deleted machine"},
		{"delete needs provider_id", nil, breakage{deleteByIDOnly: true},
			"DeleteMachine/by_name_only", "§6.3.3 DeleteMachine without provider_id deletes the VM found by machine.name: after DeleteMachine answered OK, GetMachineStatus"},
		{"delete ignores provider_id", nil, breakage{deleteIgnoresProviderID: true},
			"DeleteMachine/other_provider_id_kept", "§6.3.3 DeleteMachine with a provider_id deletes only the VM with that provider ID: after DeleteMachine of selftest-"},
		{"deleted VM comes back", nil, breakage{resurrectsDeleted: true},
			"DeleteMachine/recreate_after_delete", "§6.3.3 CreateMachine after DeleteMachine answered OK creates a new VM: CreateMachine of selftest-"},
		{"list misses machines", nil, breakage{listMissesLatest: true},
			"ListMachines/contains_created", "§6.5.3 ListMachines lists every VM the driver created for the class, once each: ListMachines does not list selftest-"},
		{"list duplicates machines", nil, breakage{listDuplicates: true},
			"ListMachines/contains_created", "§6.5.3 ListMachines lists every VM the driver created for the class, once each: ListMachines lists selftest-"},
		{"list ignores the class", nil, breakage{listIgnoresClass: true},
			"ListMachines/scoped_to_class", "§6.5.3 ListMachines lists only VMs of the class with this machine_class.namespace and machine_class.name: ListMachines for class default/reference-other"},
		{"foreign volume claimed", nil, breakage{claimsForeignVolumes: true},
			"GetVolumeIDs/fixtures", "§6.6.3 GetVolumeIDs maps the driver's volumes to their IDs and leaves out the others: volume pv-csi-other is not the driver's"},
		{"secret echoed in an error", nil, breakage{secretEchoed: true},
			"Secrets/canary_not_echoed", "§8.3 secret values never appear in error messages or response fields: the CreateMachine error message INVALID_ARGUMENT contains the canary"},
		{"deadline ignored", nil, breakage{deadlineIgnored: true},
			"Deadlines/answered_by_deadline", "§10.2 a call is answered by its deadline: CreateMachine sent with a 300ms deadline got no answer within 1.5s"},
		{"parallel calls aborted", nil, breakage{abortsParallel: true},
			"Concurrency/distinct_machines_in_parallel", "§9 calls for distinct machines succeed in parallel: CreateMachine of selftest-"},
		{"initialize does nothing", nil, breakage{initializeNoop: true},
			"InitializeMachine/initializes", "§6.2.3 InitializeMachine completes the set-up of the VM with machine.provider_id, idempotently: GetMachineStatus after InitializeMachine answered OK still returns needs_initialization=true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			caps := tc.caps
			if caps == nil {
				caps = allCaps
			}
			d := newRefDriver(caps, tc.b)
			rep := runAgainst(t, d)
			require.False(t, rep.Passed(), "the suite must fail\n%s", summary(rep))
			res, ok := rep.Result(tc.test)
			require.True(t, ok, "test %s must run", tc.test)
			require.Equal(t, conformance.StatusFailed, res.Status, "%s must fail\n%s", tc.test, summary(rep))
			found := false
			for _, f := range res.Failures {
				if strings.Contains(f, tc.want) {
					found = true
				}
			}
			assert.True(t, found, "a failure of %s must contain %q; got:\n%s", tc.test, tc.want, strings.Join(res.Failures, "\n"))
			assert.Empty(t, d.liveVMs(), "the suite deletes every VM it created, also when tests fail")
		})
	}
}
