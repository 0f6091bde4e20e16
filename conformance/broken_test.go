package conformance_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/machina-io/machina/conformance"
	"github.com/machina-io/machina/conformance/internal/trace"
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
		Secrets:         map[string][]byte{"token": []byte("s3cr3t-token-value"), "endpoint": []byte("https://api.reference.example")},
		UserData:        []byte("#cloud-config\n"),
		NamePrefix:      "selftest-",
		IdempotentCount: 3,
		Concurrency:     4,
		Volumes:         refVolumes,
		// The reference driver applies a change of labels in place.
		UpdatedProviderSpec: json.RawMessage(`{"size":"small","zone":"z1","labels":{"team":"a"}}`),
		Timeouts: conformance.Timeouts{
			Identity: 5 * time.Second, Ready: 5 * time.Second,
			Create: 10 * time.Second, Initialize: 10 * time.Second, Delete: 10 * time.Second,
			Status: 5 * time.Second, List: 5 * time.Second,
			// The largest request (4 MiB) must be answered, not time out,
			// when the mutants run 48 at a time beside other tests.
			VolumeIDs: 15 * time.Second,
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
			"GetVolumeIDs/fixtures", "GetVolumeIDs/response_shape", "GetVolumeIDs/invalid_arguments", "GetVolumeIDs/largest_request",
			"UpdateMachine/applies_in_place", "UpdateMachine/needs_new_vm", "UpdateMachine/unknown_vm",
			"UpdateMachine/no_partial_change", "UpdateMachine/deleted_vm_id", "UpdateMachine/in_parallel", "UpdateMachine/invalid_arguments",
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
				if strings.HasPrefix(r.Name, "Launcher/") {
					// The suite did not start the driver.
					assert.Equal(t, conformance.StatusSkipped, r.Status, r.Name)
					assert.Contains(t, r.SkipReason, "launcher mode", r.Name)
					continue
				}
				if r.Status == conformance.StatusSkipped {
					skipped = append(skipped, r.Name)
				}
			}
			assert.ElementsMatch(t, tc.skipped, skipped)
			assert.Empty(t, d.liveVMs(), "the suite deletes every VM it created")
		})
	}
}

// mutant is a broken variant of refDriver: one contract violation, the
// spec sentence it breaks, and the test that must catch it with a failure
// that prints that sentence's id and contains want.
type mutant struct {
	name string
	// id is the sentence broken; written "id#clause" in the lists, it
	// also names the clause (conformance/internal/trace/clauses.go),
	// which allMutants splits off.
	id   string
	caps []driverv1alpha1.Capability_Type // nil means allCaps
	b    breakage
	m    mutation
	test string // the test that must fail
	want string // a failure of that test must contain this
}

// mutants break one sentence each. Every sentence a check exercises
// (docs/conformance-matrix.md) has at least one; TestSuiteCatchesBrokenDrivers
// prints the score and fails on a mutant the suite lets pass.
var mutants = []mutant{
	{"socket open to all", "R-2.2-socket-file-have-mode#mode", nil, breakage{socketOpenToAll: true}, mutation{},
		"Transport/socket_permissions", "§2.2 the socket file has mode 0600 (no access for group and others): the socket /"},
	{"state tied to a connection", "R-2.6-accept-several-connections#no-state", nil, breakage{connectionState: true}, mutation{},
		"Transport/several_connections", "§2.6 a driver accepts several connections and ties no state to one: GetMachineStatus of selftest-"},
	{"identity changes", "R-2.7-stable-identity#info", nil, breakage{unstableIdentity: true}, mutation{},
		"Identity/stable_answers", "§2.7 GetPluginInfo and GetPluginCapabilities answer the same for the life of the process: GetPluginInfo answered"},
	{"capabilities change after a while", "R-3.4-stable-capabilities", nil, breakage{}, mutation{capsChangeLate: true},
		"Identity/stable_answers", "GetPluginCapabilities answered [TYPE_GET_VOLUME_IDS TYPE_INITIALIZE_MACHINE TYPE_LIST_MACHINES], at the start of the run"},
	{"capabilities call fails later", "R-5-implement-all-three-rpcs", nil, breakage{}, mutation{capsCallFails: true},
		"Identity/known_capabilities", "GetPluginCapabilities answered INTERNAL"},
	{"bad plugin name", "R-5.1.2-name-form#form", nil, breakage{badPluginName: true}, mutation{},
		"Identity/plugin_name", `§5.1.2 GetPluginInfo.name is at most 63 characters of [a-z0-9.-], starting and ending with an alphanumeric: the name "Reference_Driver"`},
	{"bad vendor version", "R-5.1.2-vendor-version-form", nil, breakage{badVersion: true}, mutation{},
		"Identity/vendor_version", `§5.1.2 GetPluginInfo.vendor_version is a semantic version of at most 128 bytes, optionally with a leading v: the vendor_version "latest"`},
	{"TYPE_UNSPECIFIED advertised", "R-3.4-not-list-type-unspecified", nil, breakage{unknownCapability: true}, mutation{},
		"Identity/known_capabilities", "§3.4 a driver never advertises TYPE_UNSPECIFIED (values the suite does not know are logged, not failed): capabilities[4] is TYPE_UNSPECIFIED"},
	{"never ready", "R-5.3.2-ready-when-serving", nil, breakage{}, mutation{neverReady: true},
		trace.Preflight, "the driver did not report ready within 5s"},
	{"probe fails now and then", "R-5.3.2-answer-within-5-seconds#answer", nil, breakage{}, mutation{probeErrors: true},
		"Identity/probe", "answered INTERNAL"},
	{"capability advertised but unimplemented", "R-3.5-advertised-implemented", nil, breakage{advertisedButUnimplemented: true}, mutation{},
		"Capabilities/advertised_rpcs_implemented", "§3.5 an OPTIONAL RPC whose capability is advertised is implemented: ListMachines answered UNIMPLEMENTED"},
	{"unadvertised RPC implemented", "R-3.5-unadvertised-unimplemented", []driverv1alpha1.Capability_Type{driverv1alpha1.Capability_TYPE_LIST_MACHINES}, breakage{unadvertisedImplemented: true}, mutation{},
		"Capabilities/unadvertised_rpcs_unimplemented", "§3.5 an OPTIONAL RPC whose capability is not advertised answers UNIMPLEMENTED: GetVolumeIDs (not advertised: TYPE_GET_VOLUME_IDS) answered OK, want UNIMPLEMENTED"},
	{"GetMachineStatus unimplemented", "R-3.5-required-implemented", nil, breakage{}, mutation{statusUnimplemented: true},
		"GetMachineStatus/unknown_machine", "GetMachineStatus answered UNIMPLEMENTED"},
	{"unknown fields rejected", "R-3.2-ignore-unknown-fields", nil, breakage{}, mutation{rejectsUnknownFields: true},
		"Compatibility/unknown_fields", "GetPluginInfo with an unknown field answered INVALID_ARGUMENT"},
	{"unknown metadata rejected", "R-2.4-core-may-send-metadata", nil, breakage{}, mutation{rejectsUnknownMetadata: true},
		"Compatibility/unknown_metadata", `unknown metadata \"traceparent\"`},
	{"metadata required", "R-2.4-not-require-metadata", nil, breakage{}, mutation{requiresMetadata: true},
		"Compatibility/unknown_metadata", "without metadata answered INVALID_ARGUMENT"},
	{"uid required", "R-4.1-not-require-optional-field", nil, breakage{}, mutation{requiresUID: true},
		"Compatibility/optional_fields_unset", "machine.uid is required"},
	{"wrong code for a missing name", "R-4.1-receives-request-required#code", nil, breakage{internalForMissingName: true}, mutation{},
		"CreateMachine/invalid_arguments", "§4.1 a missing or malformed REQUIRED field answers INVALID_ARGUMENT naming the field path: CreateMachine with machine.name missing answered INTERNAL"},
	{"field not named", "R-4.4-answer-invalid-argument#names-field", nil, breakage{fieldNotNamed: true}, mutation{},
		"CreateMachine/invalid_arguments", `does not name the field machine_class.provider_spec`},
	{"class namespace not required", "R-4.1-receives-request-required#missing", nil, breakage{classNamespaceIgnored: true}, mutation{},
		"CreateMachine/invalid_arguments", "CreateMachine with machine class.namespace missing answered OK, want INVALID_ARGUMENT"},
	{"provider spec array accepted", "R-4.4-answer-invalid-argument#other-json", nil, breakage{}, mutation{specArrayAccepted: true},
		"CreateMachine/invalid_arguments", "CreateMachine with machine class.provider spec an array answered OK, want INVALID_ARGUMENT"},
	{"long names rejected", "R-4.3-full-name-range#full-range", nil, breakage{}, mutation{longNameRejected: true},
		"CreateMachine/longest_name", "is longer than 63 characters"},
	{"long names cut", "R-4.3-full-name-range#unique", nil, breakage{}, mutation{longNameTruncated: true},
		"CreateMachine/longest_name", "(the long name without its last character, never created) answered OK, want NOT_FOUND"},
	{"new provider ID on each create", "R-6.1.3-one-vm-compatible-request", nil, breakage{newProviderIDEachCreate: true}, mutation{},
		"CreateMachine/idempotent", "§6.1.3 CreateMachine is idempotent on machine.name: call #2 returned provider ID"},
	{"second VM on a repeated create", "R-6.1.3-retry-no-second-vm", nil, breakage{secondVMOnRepeat: true}, mutation{},
		"CreateMachine/idempotent", "§6.1.3 repeated CreateMachine calls leave exactly one VM: ListMachines lists 5 VMs"},
	{"user data compared", "R-6.1.3-one-vm-compatible-request", nil, breakage{userDataCompared: true}, mutation{},
		"CreateMachine/idempotent", "(with another uid, annotations and user_data; last_known_state sent) answered ALREADY_EXISTS"},
	{"uid compared", "R-4.9-may-record-vm-diagnosis#not-rejected", nil, breakage{}, mutation{uidCompared: true},
		"CreateMachine/ignored_fields", "with another machine.uid answered ALREADY_EXISTS"},
	{"labels compared", "R-6.1.3-not-compare-secrets-user-data#labels", nil, breakage{}, mutation{labelsCompared: true},
		"CreateMachine/ignored_fields", "with other labels and annotations answered ALREADY_EXISTS"},
	{"incompatible create accepted", "R-6.1.3-one-vm-incompatible-request#already-exists", nil, breakage{incompatibleAccepted: true}, mutation{},
		"CreateMachine/incompatible_repeat", "§6.1.3 CreateMachine with an incompatible provider_spec for an existing VM answers ALREADY_EXISTS and keeps the VM: the call answered OK"},
	{"last_known_state rejected", "R-4.7-not-depend-correctness", nil, breakage{lastKnownStateRejected: true}, mutation{},
		"CreateMachine/last_known_state", "§4.7 last_known_state is accepted back and the driver does not depend on it: a repeated CreateMachine carrying the last_known_state the driver returned answered INVALID_ARGUMENT"},
	{"depends on last_known_state", "R-4.7-not-depend-correctness", nil, breakage{dependsOnLastKnownState: true}, mutation{},
		"CreateMachine/last_known_state", "a repeated CreateMachine without last_known_state returned provider ID"},
	{"secret in last_known_state", "R-4.7-core-not-interpret-but", nil, breakage{secretInState: true}, mutation{},
		"CreateMachine/success", "the CreateMachine response's last_known_state contains the canary secret sent in secrets or user_data (as is)"},
	{"secret in last_known_state, hex", "R-4.7-core-not-interpret-but", nil, breakage{}, mutation{secretInStateHex: true},
		"CreateMachine/success", "last_known_state contains the canary secret sent in secrets or user_data (hex)"},
	{"timed-out create makes a second VM", "R-10.2-next-call-same-machine", nil, breakage{deadlineIgnored: true, dependsOnLastKnownState: true}, mutation{},
		"CreateMachine/timed_out_create_retried", "§10.2 a CreateMachine cut short by its deadline and retried with the same name completes without a second VM: ListMachines lists 2 VMs"},
	{"status ignores provider_id", "R-6.4.3-lookup-one-vm#mismatch", nil, breakage{statusIgnoresProviderID: true}, mutation{},
		"GetMachineStatus/provider_id_mismatch", "§6.4.3 GetMachineStatus with a provider_id the VM does not have answers NOT_FOUND"},
	{"status NOT_FOUND on every second call", "R-6.4.3-lookup-one-vm#ok", nil, breakage{}, mutation{statusSecondNotFound: true},
		"GetMachineStatus/matches_create", `answered NOT_FOUND ("machine selftest-`},
	{"node name drifts", "R-4.8-node-name-stable", nil, breakage{}, mutation{nodeNameDrift: true},
		"GetMachineStatus/matches_create", "by name alone returned node name"},
	{"status of unknown machine INTERNAL", "R-6.4.3-lookup-no-vm", nil, breakage{statusUnknownInternal: true}, mutation{},
		"GetMachineStatus/unknown_machine", "§6.4.3 GetMachineStatus of an unknown machine answers NOT_FOUND: GetMachineStatus of selftest-"},
	{"class name compared", "R-6.4.1-vm-looked-up-machine#class-name", nil, breakage{}, mutation{classNameCompared: true},
		"GetMachineStatus/other_class_name", "with class name reference-renamed answered NOT_FOUND"},
	{"namespace ignored", "R-6.1.3-no-vm-machine-but", nil, breakage{}, mutation{namespaceIgnored: true},
		"CreateMachine/other_namespace", "answered OK with provider ID"},
	{"status after delete still OK", "R-6.3.3-gone-after-ok#status", nil, breakage{statusAfterDeleteOK: true}, mutation{},
		"DeleteMachine/removes_vm", "§6.3.3 after DeleteMachine answered OK the VM is gone: after DeleteMachine answered OK, GetMachineStatus of selftest-"},
	{"delete of unknown VM NOT_FOUND", "R-6.3.4-gone-answers-ok", nil, breakage{deleteUnknownNotFound: true}, mutation{},
		"DeleteMachine/unknown_machine", "§6.3.4 DeleteMachine of a machine that never existed answers OK: DeleteMachine of selftest-"},
	{"repeated delete NOT_FOUND", "R-6.3.3-idempotent", nil, breakage{deleteUnknownNotFound: true}, mutation{},
		"DeleteMachine/idempotent", "§6.3.3 DeleteMachine of a VM that is gone answers OK: DeleteMachine #2 of the deleted machine"},
	{"second delete fails", "R-6.3.3-idempotent", nil, breakage{}, mutation{deleteSecondCallFails: true},
		"DeleteMachine/idempotent", "answered INTERNAL"},
	{"delete needs provider_id", "R-6.3.3-no-provider-id-by-name", nil, breakage{deleteByIDOnly: true}, mutation{},
		"DeleteMachine/by_name_only", "§6.3.3 DeleteMachine without provider_id deletes the VM found by machine.name: after DeleteMachine answered OK, GetMachineStatus"},
	{"delete ignores provider_id", "R-6.3.3-only-that-provider-id", nil, breakage{deleteIgnoresProviderID: true}, mutation{},
		"DeleteMachine/other_provider_id_kept", "§6.3.3 DeleteMachine with a provider_id deletes only the VM with that provider ID: after DeleteMachine of selftest-"},
	{"deleted VM comes back", "R-6.3.3-gone-after-ok#create", nil, breakage{resurrectsDeleted: true}, mutation{},
		"DeleteMachine/recreate_after_delete", "§6.3.3 CreateMachine after DeleteMachine answered OK creates a new VM: CreateMachine of selftest-"},
	{"provider ID reused after delete", "R-4.8-provider-id-not-reused", nil, breakage{}, mutation{reusesProviderID: true},
		"DeleteMachine/recreate_after_delete", "has the provider ID"},
	{"deleted VM counted after re-create", "R-6.4.3-lookup-deleted", nil, breakage{}, mutation{recreateSeesDeleted: true},
		"DeleteMachine/recreate_after_delete", "after it was deleted and created again answered FAILED_PRECONDITION"},
	{"initialize does nothing", "R-6.2.3-after-answered-ok-getmachinestatus", nil, breakage{initializeNoop: true}, mutation{},
		"InitializeMachine/initializes", "§6.2.3 InitializeMachine completes the set-up of the VM with machine.provider_id, idempotently: GetMachineStatus after InitializeMachine answered OK still returns needs_initialization=true"},
	{"initialize answers another provider ID", "R-6.2.2-vm-provider-id-equal", nil, breakage{}, mutation{initProviderIDWrong: true},
		"InitializeMachine/initializes", "-initialized"},
	{"second initialize fails", "R-6.2.3-call-vm-already-initialized#ok", nil, breakage{}, mutation{initSecondCallFails: true},
		"InitializeMachine/initializes", "InitializeMachine #2 of selftest-"},
	{"initialize ignores provider_id", "R-6.2.3-not-initialize-vm-another", nil, breakage{}, mutation{initIgnoresProviderID: true},
		"InitializeMachine/unknown_vm", "answered OK, want NOT_FOUND"},
	{"list misses machines", "R-6.5.2-every-vm-once#every", nil, breakage{listMissesLatest: true}, mutation{},
		"ListMachines/contains_created", "§6.5.2 ListMachines lists every VM the driver created for the class, once each: ListMachines does not list selftest-"},
	{"list duplicates machines", "R-6.5.2-every-vm-once#once", nil, breakage{listDuplicates: true}, mutation{},
		"ListMachines/contains_created", "§6.5.2 ListMachines lists every VM the driver created for the class, once each: ListMachines lists selftest-"},
	{"list ignores the class", "R-6.5.3-only-class-vms#name", nil, breakage{listIgnoresClass: true}, mutation{},
		"ListMachines/scoped_to_class", "§6.5.3 ListMachines lists only VMs of the class with this machine_class.namespace and machine_class.name: ListMachines for class default/reference-other"},
	{"list scoped by a prefix of the class name", "R-6.5.3-only-class-vms#name", nil, breakage{}, mutation{listPrefixScope: true},
		"ListMachines/scoped_to_class", "ListMachines for class default/reference-other"},
	{"list ignores the namespace", "R-6.5.3-only-class-vms#namespace", nil, breakage{}, mutation{listOtherNamespace: true},
		"ListMachines/scoped_to_class", "ListMachines for class"},
	{"foreign volume claimed", "R-6.6.2-own-volumes-only", nil, breakage{claimsForeignVolumes: true}, mutation{},
		"GetVolumeIDs/fixtures", "§6.6.2 GetVolumeIDs maps the driver's volumes to their IDs and leaves out the others: volume pv-csi-other is not the driver's"},
	{"volume spec not JSON accepted", "R-6.6.4-invalid-argument-naming#not-json", nil, breakage{}, mutation{volumeSpecAccepted: true},
		"GetVolumeIDs/invalid_arguments", "answered OK, want INVALID_ARGUMENT"},
	{"no volumes accepted", "R-6.6.4-invalid-argument-volumes#empty", nil, breakage{}, mutation{emptyVolumesOK: true},
		"GetVolumeIDs/invalid_arguments", "answered OK, want INVALID_ARGUMENT"},
	{"at most 100 volumes", "R-2.5-accept-4-mib-requests", nil, breakage{}, mutation{batchLimited: true},
		"GetVolumeIDs/largest_request", "at most 100 volumes per call"},
	{"requests limited to 1 MiB", "R-2.5-accept-4-mib-requests", nil, breakage{}, mutation{smallRecvLimit: true},
		"GetVolumeIDs/largest_request", "answered RESOURCE_EXHAUSTED"},
	{"secret echoed in an error", "R-8.3-not-put-secret-values#errors", nil, breakage{secretEchoed: true}, mutation{},
		"Secrets/canary_not_echoed", "§8.3 secret values never appear in error messages or response fields: the CreateMachine error message (as is) INVALID_ARGUMENT contains the canary"},
	{"secret echoed in base64", "R-8.3-not-put-secret-values#errors", nil, breakage{}, mutation{secretEchoedBase64: true},
		"Secrets/canary_not_echoed", "message (base64)"},
	{"missing secret key not named", "R-4.5-missing-key-named#names-key", nil, breakage{}, mutation{keysLumped: true},
		"Secrets/each_key_missing", `CreateMachine without the secret key "endpoint" answered INVALID_ARGUMENT "the credentials are incomplete", which does not name the key`},
	{"only the first secret key checked", "R-4.5-missing-key-named#each-key", nil, breakage{}, mutation{onlyFirstKeyChecked: true},
		"Secrets/each_key_missing", `CreateMachine without the secret key "token" answered UNAUTHENTICATED`},
	{"deadline ignored", "R-10.2-end-call-deadline-own", nil, breakage{deadlineIgnored: true}, mutation{},
		"Deadlines/answered_by_deadline", "§10.2 a call is answered by its deadline: CreateMachine sent with a 300ms deadline got no answer within 1.5s"},
	{"stream reset before the deadline", "R-7.1-failed-call-carry-non-ok", nil, breakage{}, mutation{resetsStreams: true},
		"Deadlines/answered_by_deadline", "before the deadline"},
	{"parallel calls aborted", "R-7.2-aborted", nil, breakage{abortsParallel: true}, mutation{},
		"Concurrency/distinct_machines_in_parallel", "ABORTED is answered only while another operation for the same machine is in flight: CreateMachine of selftest-"},
	{"fails above two callers", "R-9-thread-safe", nil, breakage{}, mutation{failsAboveTwo: true},
		"Concurrency/distinct_machines_in_parallel", "answered INTERNAL"},
	{"provider IDs shared", "R-4.8-provider-id-unique-stable#unique", nil, breakage{}, mutation{sharedProviderIDs: true},
		"Concurrency/distinct_machines_in_parallel", "got the same provider ID"},
	{"concurrent creates of one machine", "R-9-not-run-two-creations", nil, breakage{}, mutation{racyCreate: true},
		"Concurrency/same_machine", "returned the provider IDs"},
	{"conflicting call answers INTERNAL", "R-9-handle-safely-may-answer", nil, breakage{}, mutation{conflictInternal: true},
		"Concurrency/same_machine", "operation in progress"},
	{"list entries without provider ID", "R-4.1-field-marked-required-set", nil, breakage{}, mutation{listEntryNoProviderID: true},
		"ListMachines/contains_created", "has no provider_id"},
	{"node name not DNS-1123", "R-4.2-sender-respect-these-limits", nil, breakage{}, mutation{badNodeName: true},
		"CreateMachine/success", "which is not a DNS-1123 subdomain"},
	{"manifest too big", "R-5.1.2-manifest-limits#entries", nil, breakage{}, mutation{bigManifest: true},
		"Identity/manifest", "entries"},
	{"provider listed twice", "R-5.1.2-providers-form#once", nil, breakage{}, mutation{twiceListedProvider: true},
		"Identity/providers", "is listed twice"},
	{"new machine not created", "R-6.1.3-no-vm-create-one", nil, breakage{}, mutation{createFails: true},
		"CreateMachine/success", "the provider returned an unexpected answer"},
	{"initialize of a gone VM INTERNAL", "R-6.2.4-not-found-no-vm-machine", nil, breakage{}, mutation{initUnknownInternal: true},
		"InitializeMachine/unknown_vm", "answered INTERNAL"},
	{"first delete fails", "R-6.3-required", nil, breakage{}, mutation{deleteFailsFirst: true},
		"DeleteMachine/removes_vm", "the provider refused the deletion for now"},
	{"needs_initialization without the capability", "R-6.4.2-needs-init-capability",
		[]driverv1alpha1.Capability_Type{driverv1alpha1.Capability_TYPE_LIST_MACHINES, driverv1alpha1.Capability_TYPE_GET_VOLUME_IDS}, breakage{}, mutation{needsInitWithoutCap: true},
		"GetMachineStatus/matches_create", "but the driver does not advertise TYPE_INITIALIZE_MACHINE"},
	{"volume answered twice", "R-6.6.3-one-entry-per-volume", nil, breakage{}, mutation{volumeDuplicates: true},
		"GetVolumeIDs/response_shape", "more than once"},
	{"update answers neither result", "R-6.7.2-exactly-one-result", nil, breakage{updateEmptyAnswer: true}, mutation{},
		"UpdateMachine/needs_new_vm", "answered OK with neither applied nor needs_new_vm"},
	{"update answers another provider ID", "R-6.7.2-applied-provider-id-equal", nil, breakage{updateOtherProviderID: true}, mutation{},
		"UpdateMachine/applies_in_place", "answered applied with provider ID"},
	{"update without a reason", "R-6.7.2-reason-set#required", nil, breakage{updateNoReason: true}, mutation{},
		"UpdateMachine/needs_new_vm", "answered needs_new_vm with a reason of 0 bytes"},
	{"update changes the node name", "R-6.7.3-applied-keeps-vm", nil, breakage{updateNodeNameChanges: true}, mutation{},
		"UpdateMachine/applies_in_place", "answered applied with node name"},
	{"update does nothing", "R-6.7.3-applied-matches-new-class#create", nil, breakage{updateNoop: true}, mutation{},
		"UpdateMachine/applies_in_place", "after UpdateMachine answered applied, CreateMachine of selftest-"},
	{"refused update applied anyway", "R-6.7.3-needs-new-vm-untouched", nil, breakage{updatePartial: true}, mutation{},
		"UpdateMachine/needs_new_vm", "after UpdateMachine answered needs_new_vm, CreateMachine of selftest-"},
	{"refusal as an error", "R-6.7.3-needs-new-vm-not-error", nil, breakage{updateRefusalIsError: true}, mutation{},
		"UpdateMachine/needs_new_vm", "answered FAILED_PRECONDITION"},
	{"repeated update fails", "R-6.7.3-idempotent", nil, breakage{updateRepeatFails: true}, mutation{},
		"UpdateMachine/applies_in_place", "UpdateMachine #2 of selftest-"},
	{"update ignores provider_id", "R-6.7.3-only-that-provider-id", nil, breakage{updateIgnoresProviderID: true}, mutation{},
		"UpdateMachine/unknown_vm", "answered OK, want NOT_FOUND"},
}

// allMutants are the mutants of this file and the clause mutants.
func allMutants() []clauseMutant {
	var all []clauseMutant
	for _, mu := range append(append([]mutant(nil), mutants...), clauseMutants()...) {
		c := clauseMutant{mutant: mu}
		c.id, c.clause = trace.SplitClause(mu.id)
		all = append(all, c)
	}
	return all
}

// clauseMutant is a mutant with its id split: the sentence, and the clause
// it breaks ("" for the only clause of a sentence that has one).
type clauseMutant struct {
	mutant
	clause string
}

// matchesRun reports whether -run selects the subtest name of t (its
// pattern's parts after the first, as `go test -run` matches them), so that
// `-run 'TestSuiteCatchesBrokenDrivers/mutants/some'` runs only those.
func matchesRun(t *testing.T, sub string) bool {
	pat := flag.Lookup("test.run").Value.String()
	parts := strings.Split(pat, "/")
	if len(parts) < 2 {
		return true
	}
	names := strings.Split(sub, "/")
	for i, p := range parts[1:] {
		if i >= len(names) {
			break
		}
		re, err := regexp.Compile(p)
		if err != nil || !re.MatchString(strings.ReplaceAll(names[i], " ", "_")) {
			return false
		}
	}
	return true
}

// TestSuiteCatchesBrokenDrivers runs the suite against each mutant and
// checks that the test for the broken rule fails with a message that names
// the sentence's id and contains the expected details. It prints the
// mutation score and fails unless every sentence the suite has a check for
// has a mutant the suite catches.
func TestSuiteCatchesBrokenDrivers(t *testing.T) {
	all := allMutants()
	caught := make([]bool, len(all))
	// The runs wait on the driver far more than they compute: run them
	// 48 at a time, whatever -parallel says, then judge each in a
	// subtest.
	reports := make([]*conformance.Report, len(all))
	drivers := make([]*refDriver, len(all))
	selected := make([]bool, len(all))
	sem := make(chan struct{}, 48)
	var wg sync.WaitGroup
	for i, tc := range all {
		if !matchesRun(t, "mutants/"+tc.name) {
			continue
		}
		selected[i] = true
		caps := tc.caps
		if caps == nil {
			caps = allCaps
		}
		d := newRefDriver(caps, tc.b)
		d.mut = tc.m
		drivers[i] = d
		endpoint := serveRef(t, d)
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			start := time.Now()
			reports[i] = (&conformance.Runner{}).Run(context.Background(), refConfig(endpoint))
			if d := time.Since(start); d > 8*time.Second {
				t.Logf("mutant %q took %v", tc.name, d.Round(time.Millisecond))
			}
		})
	}
	wg.Wait()
	ran := 0
	t.Run("mutants", func(t *testing.T) {
		for i, tc := range all {
			if !selected[i] {
				continue
			}
			t.Run(tc.name, func(t *testing.T) {
				ran++
				rep, d := reports[i], drivers[i]
				if rep.Passed() && tc.test != "" {
					// A run that passes catches the mutant only with a
					// warning of its rule: a check the suite added in this
					// version (Driver API §3.2, §3.7).
					res, _ := rep.Result(tc.test)
					require.True(t, slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, "["+tc.id+"]") }),
						"the suite must fail, or warn citing [%s]\n%s", tc.id, summary(rep))
				}
				if tc.test == trace.Preflight {
					// The suite cannot start: its failures are the
					// suite's own, and no check runs.
					failures := strings.Join(rep.SuiteFailures, "\n")
					assert.Contains(t, failures, tc.want)
					assert.Contains(t, failures, "["+tc.id+"]")
					assert.Contains(t, failures, tc.id+" says: ")
					caught[i] = !t.Failed()
					return
				}
				require.NotNil(t, rep.Driver, "the suite must reach the driver: %v", rep.SuiteFailures)
				res, ok := rep.Result(tc.test)
				require.True(t, ok, "test %s must run", tc.test)
				found := false
				// A breach of a rule the suite checks since this version
				// is a warning (Driver API §3.2); it counts as caught.
				for _, f := range append(append([]string(nil), res.Failures...), res.Warnings...) {
					if strings.Contains(f, tc.want) && strings.Contains(f, "["+tc.id+"]") && strings.Contains(f, tc.id+" says: ") {
						found = true
					}
				}
				assert.True(t, found, "a failure or warning of %s must contain %q and cite [%s] with its sentence; got:\n%s\n%s", tc.test, tc.want, tc.id, strings.Join(res.Failures, "\n"), strings.Join(res.Warnings, "\n"))
				if !tc.m.leavesVMs {
					assert.Empty(t, d.liveVMs(), "the suite deletes every VM it created, also when tests fail")
				}
				caught[i] = found && !t.Failed()
			})
		}
	})
	m, err := trace.Load("..")
	require.NoError(t, err)
	byID := map[string]int{}
	n := 0
	for i, tc := range all {
		if caught[i] {
			n++
			byID[tc.id]++
		}
	}
	var uncovered []string
	for _, id := range m.Checkable() {
		if byID[id] == 0 && trace.NoMutant[id] == "" {
			uncovered = append(uncovered, id)
		}
	}
	total, checked, unchecked := m.Counts()
	t.Logf("mutation score: %d of %d mutants caught; %d of %d checked sentences have a caught mutant, %d cannot have one (%d sentences, %d without a check)",
		n, len(all), checked-len(uncovered)-len(trace.NoMutant), checked, len(trace.NoMutant), total, unchecked)
	if ran < len(all) {
		t.Logf("%d of %d mutants ran (-run); the coverage of the checked sentences is not judged", ran, len(all))
		return
	}
	assert.Empty(t, uncovered, "sentences the suite checks without a mutant it catches: add one to mutants")
	doc, err := os.ReadFile("../docs/conformance.md")
	require.NoError(t, err)
	for _, line := range []string{
		fmt.Sprintf("**Mutation score:** %d of %d mutants caught", n, len(all)),
		fmt.Sprintf("**Checked sentences with a caught mutant:** %d of %d", checked-len(uncovered)-len(trace.NoMutant), checked),
	} {
		assert.Contains(t, string(doc), line, "docs/conformance.md §9 states the score")
	}
}
