// Package machinedeployment is the MachineDeployment controller: it rolls
// machines out through MachineSets, the way the Kubernetes Deployment
// controller rolls pods through ReplicaSets, with MCM's additions.
//
// A reconcile reads like a table of contents (machinedeployment_controller.go):
// a deployment being deleted deletes its machine sets and then its finalizer
// (delete.go); any other gets the finalizer and is gathered into a scope
// (scope.go). A phase that settles the sync stops the ones after it. The
// phases:
//
//  1. validate (validate.go): a selector that selects the template, a
//     strategy the controller can act on and template durations it can use;
//     otherwise an event (and the Progressing condition InvalidStrategy or
//     InvalidDuration), and stop.
//  2. loadSets (machinesets.go): claim the machine sets (adopt orphans,
//     release sets that no longer match), split them into the new one and the
//     old ones, group their machines.
//  3. holdWhileFrozen (freeze.go): while the API server freeze holds, report
//     the counts only, and stop.
//  4. recordPause (pause.go): pausing and resuming in the Progressing
//     condition.
//  5. triggerDeletion (triggerdeletion.go): mark the machines the
//     cluster-autoscaler named for deletion.
//  6. scalePaused (pause.go): a paused deployment scales proportionally and
//     cleans up its history, and stops.
//  7. rollback (rollback.go): spec.rollbackTo puts the old template back in
//     one spec write, and stops.
//  8. scale (scale.go): a scaling event scales the sets proportionally, and
//     stops.
//  9. rollout (rollout.go): one step of the strategy's rollout, then the
//     rollout's status (progress.go, conditions.go).
//  10. expire (expiry.go): once the rollout is complete, delete one machine
//     of the new set at a time, within maxUnavailable: the oldest of those
//     older than the template's expireAfter, then, with
//     spec.disruption.replaceDrifted, those whose VM drifted from its class.
//
// Then the revision annotation and the status are written once, each only if
// it changed (status.go).
//
// The strategies are pluggable (strategy.go): each strategy type is a
// rolloutStrategy, which gives its surge and unavailability bounds and takes
// one rollout step, and the map strategies lists them: RollingUpdate
// (rolling.go, which also marks the target cluster's nodes, nodes.go),
// Recreate (recreate.go) and InPlaceUpdate (inplace.go). A new strategy is
// one more file and one more entry in that map; its validation is the error
// its bounds method returns. RollingUpdate and Recreate, and the scaling of
// a scaling event or a paused deployment, plan, then write (plan.go): the
// step is a pure function of a snapshot of the sets' counts (planRolling,
// planRecreate, planScale) that returns the scale steps, which applyPlan
// writes in order; the golden plans in testdata/plans (plan_test.go) hold
// the rules. An in-place rollout plans its wave the same way: which nodes
// may be selected, and how many (planWave, plan_wave.go; golden waves in
// testdata/plans/wave), and its set sizes: every set following its
// machines (planInPlaceSizes) and the sets after the moves of updated
// machines (planInPlaceMoves; plan_inplace.go, golden sizings in
// testdata/plans/inplace), written by applySteps; the pod and hook holds,
// read live, stay in selectForUpdate. The bounds come from bounds.go; revisions, the template hash
// and the new machine set from machinesets.go and hash.go; old-set cleanup
// from history.go. docs/machinedeployments.md describes the behaviour for
// users.
package machinedeployment
