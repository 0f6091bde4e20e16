// Package chaos is machina's fault suite: it runs the manager and a driver
// as real processes against a real kube-apiserver and etcd, hurts them the
// way production does (the manager killed with SIGKILL at random points of
// a scale-up, a rolling update and a scale-down; the driver killed with
// SIGKILL; the API server stopped and brought back on the same port against
// the same etcd; driver calls failing at a fixed rate, some after they took
// effect), and after each phase counts what exists: VMs through the
// driver's ListMachines over its socket, Machines, and Nodes. A phase fails
// on a leaked VM (no Machine), a duplicate VM (two for one Machine), an
// orphan Node (no Machine), a machine that went Failed, a machine stuck
// short of its healthy phase, or an unexpected manager exit. At the end it
// searches every log file, every Event and every machine object and Node
// for a canary value that only the MachineClass's Secret (and its user
// data) holds, plainly and in base64 and hex.
//
// The random points come from one seed, printed at the start, so that a
// failed run can be replayed. TestChaos runs a bounded configuration in
// `make test`; `make chaos` (hack/chaos.sh) runs the full one.
// docs/reliability.md has the results of a full run; docs/testing.md says
// how to run it.
package chaos
