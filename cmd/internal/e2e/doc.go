// Package e2e holds machina's end-to-end suite: MCM's nine integration
// scenarios (machine creation and deletion, a MachineDeployment created,
// scaled up and down, rolled to another class and deleted, and orphan VM
// collection) played against real processes.
//
// The test builds machina-manager and machina-driver-virtualnode, starts a
// kube-apiserver and etcd (envtest, with deploy/crds), runs the driver and
// the manager as child processes joined by a Unix socket, and walks the
// scenarios in order on that one environment, as MCM's ControllerTests
// share one cluster. The virtualnode driver turns every VM into a Node of
// the same API server, so "a node joined the target cluster" is observable
// without a cloud.
//
// TestInPlaceRollout, on an environment of its own, rolls a MachineDeployment
// with the InPlaceUpdate strategy over three machines, each node served by a
// real machina-node-agent process (docs/in-place-updates.md).
//
// TestMachineConfigPoolRollout, on an environment of its own, rolls a
// MachineConfig with a file and a systemd unit out to a pool of a
// MachineDeployment's three machines (maxUnavailable 1), each node served by
// a real machina-node-agent process writing into its own temporary root
// (docs/machine-config.md).
//
// TestClusterAutoscalerContract, on an environment of its own, plays the
// checks and calls of Gardener's cluster-autoscaler (its mcm provider) step
// by step: the Deployment it looks up, node templates, /scale, the
// trigger-deletion-by-mcm and priority annotations (docs/operating.md,
// "Cluster-autoscaler").
//
// Run it with
//
//	KUBEBUILDER_ASSETS=$(hack/envtest-assets.sh) go test -count=1 -run TestIntegrationScenarios -v ./cmd/internal/e2e/
//
// Set MACHINA_E2E_LOG_DIR to keep the manager's and driver's logs in that
// directory; otherwise they are written to a temporary directory and their
// tails are printed when the test fails. docs/testing.md describes where this
// suite sits among the others.
package e2e
