package machineset

import (
	"context"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/setup"
)

// scope is what one sync knows about one MachineSet. The phases read and
// change it; the reconcile writes the status they computed once, at the end
// (status.go).
type scope struct {
	// ms is the set as read (the cache's copy after the finalizer).
	ms *v1alpha1.MachineSet
	// selector is the set's selector, parsed by validate.
	selector labels.Selector
	// machines are the machines the set controls after claimMachines: the
	// cache's own objects, only to be read (copied before a change), or the
	// fresh list manageReplicas planned from.
	machines []*v1alpha1.Machine
	// plan is what manageReplicas did, and manageErr the first failure of
	// each kind of its creates and deletes; the status reports them.
	plan      plan
	manageErr error
	// status is the status to write; nil writes nothing (a sync that failed
	// before it knew the counts).
	status *v1alpha1.MachineSetStatus
	// patcher writes the status at the end of the sync (status.go).
	patcher *setup.Patcher

	log logr.Logger
}

// newScope gathers what a sync starts from.
func newScope(ctx context.Context, c client.Client, ms *v1alpha1.MachineSet) *scope {
	// The status patch carries the resourceVersion: a status computed from
	// a stale set is rejected and recomputed on the next sync rather than
	// written. The counts always go in it: a count of 0 is stored, and
	// kubectl get shows 0 rather than a blank.
	p := setup.NewPatcher(c, ms, setup.LockStatus(),
		setup.StatusCounts("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas"))
	return &scope{ms: ms, patcher: p, log: ctrl.LoggerFrom(ctx)}
}
