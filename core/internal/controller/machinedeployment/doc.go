// Package machinedeployment is the MachineDeployment controller: it rolls
// machines out through MachineSets, the way the Kubernetes Deployment
// controller rolls pods through ReplicaSets, with MCM's additions.
//
// The reconcile (machinedeployment_controller.go) claims the machine sets
// (machinesets.go), serves the cluster-autoscaler's deletion requests
// (triggerdeletion.go), and then takes one step: proportional scaling
// (scale.go), a rollback (rollback.go), or a rollout step (rolling.go with the
// bounds of fenceposts.go, recreate.go), marking the target cluster's nodes
// during a rolling update (nodes.go). Revisions and the template hash are in
// machinesets.go and hash.go, old-set cleanup in history.go, status and
// conditions in progress.go and conditions.go. The status is written once per
// sync, only when it changed. docs/machinedeployments.md describes the
// behaviour for users.
package machinedeployment
