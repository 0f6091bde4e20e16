package trace

// Why a sentence has no check. Each normative sentence of the spec either
// is exercised by a check of the suite or has one of these reasons in
// Unchecked; TestTraceability fails otherwise.
const (
	// The sentence binds the core (or the operator), not the driver.
	notDriver = "an obligation of the core or of the operator, not of the driver"
	// The suite connects to a driver that is already running.
	startup = "about what the driver does or logs while it starts, which neither a client of the running driver nor the Launcher checks observe (the SDK's and the reference drivers' own tests cover it)"
	// The condition needs the provider to fail in a way the suite cannot
	// cause from outside.
	provider = "needs a provider condition the suite cannot cause from outside (no capacity, rejected credentials, an unreachable or failing provider API, a deletion refused by the provider)"
	// What the driver does inside, or at the provider, is not visible in
	// its answers.
	internal = "about what the driver does inside or at the provider (logs, memory, tags, provider calls); not visible in its answers"
	// A SHOULD that leaves room for judgement a test cannot make.
	judgement = "a recommendation whose fulfilment needs human judgement (wording, timing under real load, choice of properties)"
	// A driver-side bug a test cannot cause on purpose.
	unforced = "about a driver's own failure (a bug, a non-status error, a missing RPC); the suite cannot make a correct driver fail this way, and checks the code wherever it can cause the condition"
	// Cannot be produced by one client within a run.
	process = "about the life of the driver process across restarts or versions, which the suite does not control"
	// A provider state a correct driver never produces.
	badState = "needs a provider state that a correct driver never produces (several VMs for one Machine); the suite can reach the provider only through the driver"
	// A moment the suite cannot choose.
	timing = "needs a call to arrive at a moment the suite cannot choose (while the driver's own work is in flight)"
	// Needs more VMs or data than a test run should create.
	scale = "needs a response of a size only a very large class produces (16 MiB); the suite does not create thousands of VMs"
	// Only the core's reaction: the row asks nothing of the driver.
	coreReaction = "the row states only the core's reaction to an answer; it asks nothing of the driver"
	// A summary of the error tables.
	perRow = "summarises the error tables, whose rows have ids of their own"
	// The suite sends what the core sends.
	sameAsCore = "the suite sends this value as the core does; a driver depending on it cannot be told apart from one that does not"

	restatesPrefix = "restates "
)

// restates is the reason of a sentence that repeats another, whose checks
// cover it.
func restates(id string) string { return restatesPrefix + id + ", which the matrix traces" }

// Unchecked gives, for every sentence no check exercises, the reason.
var Unchecked = map[string]string{
	// §2 Transport and endpoint.
	"R-2.2-name-end-sock":                   notDriver,
	"R-2.2-two-drivers-not-configured":      notDriver,
	"R-2.2-core-run-same-user":              notDriver,
	"R-2.3-listening-tcp-log-warning":       startup,
	"R-2.3-production-deployments":          notDriver,
	"R-2.4-not-depend-value":                sameAsCore,
	"R-2.4-not-compress-response-algorithm": unforced,
	"R-2.5-not-send-larger-response":        scale,
	"R-2.6-not-assume-calls-one":            restates("R-2.6-accept-several-connections"),
	"R-2.6-keep-state-needs-idempotency":    internal,

	// §3 Versioning and capabilities.
	"R-3.2-receivers-built-older-proto":    "binds the authors of the API when they add a field, not a driver",
	"R-3.3-because-method-paths-differ":    process,
	"R-3.4-list-optional-rpc-implements":   restates("R-3.5-advertised-implemented"),
	"R-3.4-required-rpcs-have-no":          restates("R-3.5-required-implemented"),
	"R-4.1-proto3-scalar-field-not":        restates("R-4.1-field-marked-required-set"),
	"R-4.1-document-states-optional":       restates("R-4.1-not-require-optional-field"),
	"R-4.1-required-optional-markers":      "about the .proto comments, not about a driver",
	"R-4.4-not-reject-content-only":        judgement,
	"R-4.4-ignore-unknown-keys-reject":     judgement,
	"R-4.4-refuse-invalid-argument":        "which keys are secret-only is each driver's documentation, unknown to the suite",
	"R-4.6-not-parse-rewrite-placeholders": internal,
	"R-4.6-not-use-user-data-decide":       restates("R-6.1.3-not-compare-secrets-user-data"),
	"R-4.8-value-vm-node-will":             "the suite has no Node to compare with; the core's end-to-end tests do",
	"R-4.8-return-name-node-will":          "the suite has no Node to compare with; the core's end-to-end tests do",
	"R-4.8-cannot-tell-case-applies":       restates("R-4.1-field-marked-required-set"),
	"R-4.10-check-what-needs-answer":       restates("R-4.1-receives-request-required"),
	"R-4.10-name-field-path-machine":       restates("R-4.1-receives-request-required"),
	"R-4.10-not-contain-secret-values":     restates("R-8.3-not-put-secret-values"),
	"R-4.10-one-sentence-human-operator":   judgement,

	"R-4.4-answer-invalid-argument-2":   "which content a driver rejects is its own schema, unknown to the suite",
	"R-6.1.3-not-compare-machine-class": judgement,
	"R-6.6.4-two-volumes-same-name":     "the core never sends two volumes of one name, and the row allows either answer",

	// §5 Identity service.
	"R-5-not-call-provider-way":             judgement,
	"R-5.1.2-name-stay-same-across":         process,
	"R-5.1.3-unimplemented-not-serve":       restates("R-5-implement-all-three-rpcs"),
	"R-5.1.3-name-vendor-version-invalid":   restates("R-5.1.2-name-form"),
	"R-5.1.3-other-code-returned":           coreReaction,
	"R-5.2.3-unimplemented-not-serve":       restates("R-5-implement-all-three-rpcs"),
	"R-5.2.3-other-code-returned":           coreReaction,
	"R-5.3.2-probe-cheap-core-calls":        judgement,
	"R-5.3.2-may-check-cached-result":       internal,
	"R-5.3.2-while-starting-answer-ready":   startup,
	"R-5.3.3-unimplemented-not-serve":       restates("R-5-implement-all-three-rpcs"),
	"R-5.3.3-unavailable-deadline-exceeded": coreReaction,
	"R-5.3.3-failed-precondition-unhealthy": startup,
	"R-5.3.3-other-code-returned":           coreReaction,

	"R-5.3.2-answers-ready-false-answer": "a SHOULD: the suite fails only MUSTs (docs/conformance.md §7); it logs a ready=false during the run",
	// §6 Machine service.
	"R-6-error-tables-list-conditions":           perRow,
	"R-6.1-required":                             restates("R-3.5-required-implemented"),
	"R-6.1.3-idempotent":                         restates("R-6.1.3-one-vm-compatible-request"),
	"R-6.1.3-unique-name-mapping":                internal,
	"R-6.1.3-several-vms-contract-violation":     badState,
	"R-6.1.3-creation-machine-still":             restates("R-10.2-next-call-same-machine"),
	"R-6.1.3-vm-being-deleted-terminated":        restates("R-6.3.3-gone-after-ok"),
	"R-6.1.3-decides-properties-count":           judgement,
	"R-6.1.3-whose-provider-creates":             internal,
	"R-6.1.3-not-wait-vm-boot":                   judgement,
	"R-6.1.3-created-provider-resources":         internal,
	"R-6.1.4-cannot-complete-call-return":        unforced,
	"R-6.1.4-conditions-below-return":            perRow,
	"R-6.1.4-invalid-argument-required":          restates("R-4.1-receives-request-required"),
	"R-6.1.4-already-exists-vm-exists":           restates("R-6.1.3-one-vm-incompatible-request"),
	"R-6.1.4-failed-precondition-naming":         badState,
	"R-6.1.4-resource-exhausted-provider":        provider,
	"R-6.1.4-unauthenticated-provider":           provider,
	"R-6.1.4-permission-denied-credentials":      provider,
	"R-6.1.4-failed-precondition-resource":       provider,
	"R-6.1.4-aborted-another-call-creation":      restates("R-9-handle-safely-may-answer"),
	"R-6.1.4-unavailable-provider-api":           provider,
	"R-6.1.4-deadline-exceeded-call":             restates("R-10.2-end-call-deadline-own"),
	"R-6.1.4-internal-unexpected-failure":        unforced,
	"R-6.1.4-unknown-failure-cannot":             unforced,
	"R-6.1.4-unimplemented-not-implement":        restates("R-3.5-required-implemented"),
	"R-6.1.4-resource-exhausted-mean":            provider,
	"R-6.2.3-idempotent":                         restates("R-6.2.3-call-vm-already-initialized"),
	"R-6.2.3-return-once-set-up-done":            judgement,
	"R-6.2.4-invalid-argument-required":          restates("R-4.1-receives-request-required"),
	"R-6.2.4-unavailable-vm-not-ready":           provider,
	"R-6.2.4-resource-exhausted-capacity":        provider,
	"R-6.2.4-unauthenticated-permission-denied":  provider,
	"R-6.2.4-failed-precondition-initialization": provider,
	"R-6.2.4-aborted-another-call-machine":       restates("R-9-handle-safely-may-answer"),
	"R-6.2.4-deadline-exceeded-deadline":         restates("R-10.2-end-call-deadline-own"),
	"R-6.2.4-internal-unexpected-failure":        unforced,
	"R-6.2.4-unknown-unclassified-failure":       unforced,
	"R-6.2.4-unimplemented-advertises":           restates("R-3.5-advertised-implemented"),
	"R-6.3.3-call-return-once-provider":          judgement,
	"R-6.3.3-listmachines-may-still":             "the suite cannot see whether the provider still has a deleted VM (terminating); it checks that a deleted VM is gone for GetMachineStatus and CreateMachine",
	"R-6.3.3-delete-what-created-together":       internal,
	"R-6.3.3-not-delete-persistent-volumes":      internal,
	"R-6.3.4-not-found-not-conforming":           restates("R-6.3.4-gone-answers-ok"),
	"R-6.3.4-invalid-argument-required":          restates("R-4.1-receives-request-required"),
	"R-6.3.4-unauthenticated-permission-denied":  provider,
	"R-6.3.4-failed-precondition-provider":       provider,
	"R-6.3.4-aborted-another-call-machine":       restates("R-9-handle-safely-may-answer"),
	"R-6.3.4-unavailable-provider-api":           provider,
	"R-6.3.4-deadline-exceeded-deadline":         restates("R-10.2-end-call-deadline-own"),
	"R-6.3.4-internal-unexpected-failure":        unforced,
	"R-6.3.4-unknown-unclassified-failure":       unforced,
	"R-6.3.4-unimplemented-not-implement":        restates("R-3.5-required-implemented"),
	"R-6.4-required":                             restates("R-3.5-required-implemented"),
	"R-6.4.3-getmachinestatus-not-change":        internal,
	"R-6.4.3-while-own-creation-machine":         timing,
	"R-6.4.3-getmachinestatus-changes":           "a VM the provider completes by itself may report needs_initialization=false without InitializeMachine, so the suite cannot tell whether GetMachineStatus did the work",
	"R-6.4.4-not-found-no-vm":                    restates("R-6.4.3-lookup-no-vm"),
	"R-6.4.4-failed-precondition-several":        badState,
	"R-6.4.4-invalid-argument-required":          restates("R-4.1-receives-request-required"),
	"R-6.4.4-unauthenticated-permission-denied":  provider,
	"R-6.4.4-aborted-another-call-creation":      restates("R-9-handle-safely-may-answer"),
	"R-6.4.4-unavailable-provider-unreachable":   provider,
	"R-6.4.4-deadline-exceeded-deadline":         restates("R-10.2-end-call-deadline-own"),
	"R-6.4.4-internal-unexpected-failure":        unforced,
	"R-6.4.4-unknown-unclassified-failure":       unforced,
	"R-6.4.4-unimplemented-not-implemented":      restates("R-3.5-required-implemented"),
	"R-6.5.3-not-list-vms-created":               restates("R-6.5.3-only-class-vms"),
	"R-6.5.3-two-control-clusters-same":          notDriver,
	"R-6.5.3-record-creation-what-listmachines":  internal,
	"R-6.5.3-leaving-vm-out-safe":                internal,
	"R-6.5.3-response-fit-16-mib":                scale,
	"R-6.5.3-listmachines-not-change":            internal,
	"R-6.5.4-invalid-argument-required":          restates("R-4.1-receives-request-required"),
	"R-6.5.4-unauthenticated-permission-denied":  provider,
	"R-6.5.4-unavailable-provider-unreachable":   provider,
	"R-6.5.4-deadline-exceeded-deadline":         restates("R-10.2-end-call-deadline-own"),
	"R-6.5.4-internal-unknown-unexpected":        unforced,
	"R-6.5.4-unimplemented-advertised":           restates("R-3.5-advertised-implemented"),
	"R-6.6.3-getvolumeids-not-change":            internal,
	"R-6.6.3-volume-id-full-provider":            judgement,
	"R-6.6.4-unavailable-deadline-exceeded":      provider,
	"R-6.6.4-internal-others-other-failure":      unforced,
	"R-6.6.4-unimplemented-advertised":           restates("R-3.5-advertised-implemented"),
	"R-6.7.3-trust-own-record":                   internal,
	"R-6.7.4-invalid-argument-required":          restates("R-4.1-receives-request-required"),
	"R-6.7.4-not-found-no-vm":                    restates("R-6.7.3-only-that-provider-id"),
	"R-6.7.4-unauthenticated-permission-denied":  provider,
	"R-6.7.4-resource-exhausted":                 provider,
	"R-6.7.4-failed-precondition":                provider,
	"R-6.7.4-unavailable-provider":               provider,
	"R-6.7.4-aborted-another-call":               timing,
	"R-6.7.4-deadline-exceeded-deadline":         restates("R-10.2-end-call-deadline-own"),
	"R-6.7.4-internal-unexpected-failure":        unforced,
	"R-6.7.4-unknown-unclassified-failure":       unforced,
	"R-6.7.4-unimplemented-advertised":           restates("R-3.5-advertised-implemented"),

	// §7 Errors.
	"R-7.1-pick-code-condition-using": perRow,
	"R-7.1-say-what-failed-what":      judgement,
	"R-7.1-not-contain-secret-values": restates("R-8.3-not-put-secret-values"),
	"R-7.2-cancelled":                 unforced,
	"R-7.2-unknown":                   unforced,
	"R-7.2-invalid-argument":          restates("R-4.1-receives-request-required"),
	"R-7.2-deadline-exceeded":         restates("R-10.2-end-call-deadline-own"),
	"R-7.2-not-found":                 restates("R-6.3.4-gone-answers-ok"),
	"R-7.2-already-exists":            restates("R-6.1.3-one-vm-incompatible-request"),
	"R-7.2-permission-denied":         provider,
	"R-7.2-resource-exhausted":        provider,
	"R-7.2-failed-precondition":       provider,
	"R-7.2-unimplemented":             restates("R-3.5-unadvertised-unimplemented"),
	"R-7.2-internal":                  unforced,
	"R-7.2-unauthenticated":           provider,
	"R-7.2-out-of-range-data-loss":    unforced,

	// §8 Secrets.
	"R-8.3-not-log-value-secret":    internal,
	"R-8.3-not-echo-provider-error": provider,
	"R-8.3-not-keep-secrets-memory": internal,

	// §9 Concurrency, §10 Timeouts.
	"R-9-expect-tens-hundreds-concurrent":  restates("R-9-thread-safe"),
	"R-9-not-serialise-calls-different":    judgement,
	"R-10.2-stop-waiting-handler-deadline": internal,
	"R-10.2-leave-provider-state-retry":    restates("R-10.2-next-call-same-machine"),
	"R-10.2-not-set-own-shorter":           internal,

	// §11 The lifecycle.
	"R-11.3-not-refuse-lookup-because":     restates("R-4.9-may-record-vm-diagnosis"),
	"R-11.6-after-step-4-report":           restates("R-6.3.3-gone-after-ok"),
	"R-11.8-later-calls-existing-machines": judgement,
}
