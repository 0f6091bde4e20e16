package machinedeployment

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// scope is what one sync knows about one MachineDeployment. The phases read
// and change it; the reconcile writes the deployment's revision and status
// once, at the end (status.go).
type scope struct {
	// d is a working copy of the deployment whose status the phases change in
	// memory; origStatus is the status as read, to tell whether anything
	// changed and to base the patches on.
	d          *v1alpha1.MachineDeployment
	origStatus v1alpha1.MachineDeploymentStatus

	// selector is the deployment's selector, parsed by validate.
	selector labels.Selector
	// sets are the machine sets the deployment controls, loaded by loadSets:
	// new is the one of the current template (nil until it exists), old all
	// others. machines are their machines, by set UID: the cache's own
	// objects, only to be read.
	sets     []*v1alpha1.MachineSet
	new      *v1alpha1.MachineSet
	old      []*v1alpha1.MachineSet
	machines map[types.UID][]*v1alpha1.Machine

	now time.Time
	log logr.Logger

	// revision is the revision the deployment's annotation should carry.
	revision string
	// skipStatus is set when the sync wrote the deployment's spec, or could
	// not read its machine sets: nothing more is written in this sync (the
	// next one, triggered by the write or the retry, computes the status).
	skipStatus bool
	// retryNodes is set (noteNodeConflict) when a node could not be marked
	// for the rollout because it changed meanwhile; the sync runs again
	// soon for it.
	retryNodes bool
	// inPlace is what an in-place rollout step found (inplace.go), for the
	// status; nil for other strategies.
	inPlace *inPlaceState
	// budgetHeld says how a disruption budget held this sync's disruption
	// back ("" when none did); budgetRecheck is when a budget's window
	// changes next (zero without scheduled budgets).
	budgetHeld    string
	budgetRecheck time.Time

	// writtenNodes are the nodes this sync wrote, as the API server
	// returned them: the cache shows a write only a moment later, and a
	// second change of the same node in the same sync must start from the
	// written node, not the cached one (a patch with the resource version
	// would fail, one without would undo the first).
	writtenNodes map[string]*corev1.Node

	// mu guards retryNodes and writtenNodes: a sync writes many nodes at
	// once (inParallel).
	mu sync.Mutex
}

// noteNodeConflict asks for the sync to run again soon.
func (s *scope) noteNodeConflict() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.retryNodes = true
}

// noteNodeWritten keeps n, as the API server returned it, for the rest of
// the sync.
func (s *scope) noteNodeWritten(n *corev1.Node) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.writtenNodes == nil {
		s.writtenNodes = map[string]*corev1.Node{}
	}
	s.writtenNodes[n.Name] = n
}

// writtenNode returns the node of that name this sync wrote, or nil. It is
// the scope's own: callers copy it before a change.
func (s *scope) writtenNode(name string) *corev1.Node {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writtenNodes[name]
}

// newScope gathers what a sync starts from.
func newScope(ctx context.Context, d *v1alpha1.MachineDeployment) *scope {
	return &scope{
		d:          d.DeepCopy(),
		origStatus: *d.Status.DeepCopy(),
		now:        time.Now(),
		log:        ctrl.LoggerFrom(ctx),
		revision:   d.Annotations[v1alpha1.RevisionAnnotation],
	}
}

func (s *scope) setRevision(rev string) { s.revision = rev }

// all returns the old sets and the new one.
func (s *scope) all() []*v1alpha1.MachineSet {
	out := append([]*v1alpha1.MachineSet(nil), s.old...)
	if s.new != nil {
		out = append(out, s.new)
	}
	return out
}

// oldMachinesLeft reports whether any old machine set still wants or has
// machines, terminating ones included.
func (s *scope) oldMachinesLeft() bool {
	for _, ms := range s.old {
		if ms.Spec.Replicas > 0 || ms.Status.Replicas > 0 {
			return true
		}
	}
	for _, ms := range s.old {
		if len(s.machines[ms.UID]) > 0 {
			return true
		}
	}
	return false
}

// machineCount is the number of machines of all the deployment's sets.
func (s *scope) machineCount() int {
	n := 0
	for _, ms := range s.machines {
		n += len(ms)
	}
	return n
}
