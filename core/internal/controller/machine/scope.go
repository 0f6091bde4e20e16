package machine

import (
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/driver"
)

// scope is what one reconcile knows about one Machine. The phase functions
// read and change it; the reconcile writes machine back once, at the end.
type scope struct {
	// machine is the object as the phases change it; original is the object
	// as read, to compute the patch and to tell whether anything changed.
	machine  *v1alpha1.Machine
	original *v1alpha1.Machine

	// class and its merged secret data, loaded by loadClass when a phase
	// needs the driver.
	class    *v1alpha1.MachineClass
	secrets  map[string][]byte
	userData []byte
	// driver serves the class's provider, found by loadClass.
	driver *driver.Client

	// node is the Machine's Node in the target cluster (nil when it has none
	// or it does not exist), read by loadNode.
	node       *corev1.Node
	nodeLoaded bool
	// nodeWritten is the Node as last read or written while node carries
	// an InPlaceUpdate condition not written yet (deferInPlaceCondition);
	// nil otherwise.
	nodeWritten *corev1.Node
	// selectionOwed is set while the InPlaceUpdateSelected event waits
	// for the drain of the same reconcile: a drained node's go signal says
	// both in one event (reconcileInPlace).
	selectionOwed bool

	now time.Time
	log logr.Logger

	// released is set once the finalizer is gone: the Machine is about to
	// disappear and must not be written again.
	released bool
	// retryAfter is the retry period of a deletion step that failed in
	// this reconcile (deletionFailed); reconcileDelete holds the step that
	// long in the retry gate.
	retryAfter time.Duration

	// permitHeld is set when the meltdown guard admitted the machine's
	// replacement in this reconcile; the permit is released if the Failed
	// phase cannot be written.
	permitHeld bool
}

// nodeName is the name of the Machine's Node, from the label the controller
// sets once the driver reported it.
func (s *scope) nodeName() string {
	return s.machine.Labels[v1alpha1.NodeLabelKey]
}

// config returns the per-machine overrides (never nil).
func (s *scope) config() v1alpha1.MachineConfiguration {
	if s.machine.Spec.MachineConfiguration == nil {
		return v1alpha1.MachineConfiguration{}
	}
	return *s.machine.Spec.MachineConfiguration
}
