// Package node is the Node controller. It runs on the Nodes of the target
// cluster and the Machines of the control cluster, and does two things:
//
//   - it keeps MCM's finalizer node.machine.sapcloud.io/machine-controller on
//     every Node that belongs to a Machine (the Machine's label "node" names
//     it) that is not being deleted;
//   - when such a Node is deleted, it deletes the Machine. The Machine's
//     deletion flow then drains the Node, deletes the VM, and removes the
//     finalizer at its node-deletion step, so that the Node disappears
//     together with its VM and not before.
//
// A Node that is being deleted while no Machine claims it any more (the
// Machine was removed by force, say) is released at once, so that it does
// not hang forever. Node events reach their Machine through the Machine
// controller's own watch on Nodes; this controller does not duplicate it.
//
// Nodes are written through setup.Patcher: the finalizer with a strategic
// merge patch (merged into the finalizers the Node has by then, so the
// kubelet's writes cause no conflict), the not-managed annotation with a
// merge patch; a conflict is setup.RequeueOnConflict's: reconciled again
// soon, no error.
package node
