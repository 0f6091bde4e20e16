package setup

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// The Machine cache's indexes that controllers share: one index per key, so
// each machine's keys are held once in memory however many controllers read
// by them. IndexMachines registers both.
const (
	// MachineNodeIndex indexes Machines by their node label
	// (v1alpha1.NodeLabelKey), the name of their Node.
	MachineNodeIndex = "machina.io/machine-node-name"
	// MachineControllerIndex indexes Machines by the UID of their
	// controller (a MachineSet), and machines without one under Orphan, so
	// that a set finds both its own and the ones it may adopt.
	MachineControllerIndex = "machina.io/machine-controller-uid"
	// Orphan is the MachineControllerIndex value of a machine without a
	// controller; no UID has this form.
	Orphan = "<orphan>"
)

// registered remembers the indexers IndexMachines registered with: a
// second controller of the same manager asking again is not an error.
var registered = struct {
	sync.Mutex
	done map[client.FieldIndexer]bool
}{done: map[client.FieldIndexer]bool{}}

// IndexMachines registers MachineNodeIndex and MachineControllerIndex with
// mgr's cache, once per manager whatever number of controllers calls it.
func IndexMachines(mgr ctrl.Manager) error {
	indexer := mgr.GetFieldIndexer()
	registered.Lock()
	defer registered.Unlock()
	if registered.done[indexer] {
		return nil
	}
	ctx := context.Background()
	if err := indexer.IndexField(ctx, &v1alpha1.Machine{}, MachineNodeIndex, nodeName); err != nil {
		return fmt.Errorf("indexing machines by node: %w", err)
	}
	if err := indexer.IndexField(ctx, &v1alpha1.Machine{}, MachineControllerIndex, ControllerUID); err != nil {
		return fmt.Errorf("indexing machines by controller: %w", err)
	}
	registered.done[indexer] = true
	return nil
}

func nodeName(o client.Object) []string {
	if n := o.GetLabels()[v1alpha1.NodeLabelKey]; n != "" {
		return []string{n}
	}
	return nil
}

// ControllerUID is the index function of MachineControllerIndex: an
// object's controller's UID, Orphan for an object without controller.
func ControllerUID(o client.Object) []string {
	if ref := metav1.GetControllerOfNoCopy(o); ref != nil {
		return []string{string(ref.UID)}
	}
	return []string{Orphan}
}
