package classupdate

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// calls holds the UpdateMachine calls in flight, per class. Each runs on
// its own, outside the reconcile that started it: a call that takes long
// (up to the driver client's call timeout) holds one slot of its class's
// budget, not the class's reconciles nor the controller's workers. When a
// call ends, its class is reconciled again (ended), which starts the next
// call in the freed slot.
type calls struct {
	mu      sync.Mutex
	byClass map[client.ObjectKey]map[types.UID]bool
	// ended receives the class of each call that ended; the controller
	// watches it (a channel source).
	ended chan event.TypedGenericEvent[*v1alpha1.MachineClass]
}

func newCalls() *calls {
	return &calls{
		byClass: map[client.ObjectKey]map[types.UID]bool{},
		ended:   make(chan event.TypedGenericEvent[*v1alpha1.MachineClass]),
	}
}

// inFlight reports whether the machine uid of class has a call in flight.
func (c *calls) inFlight(class client.ObjectKey, uid types.UID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byClass[class][uid]
}

// count returns how many calls of class are in flight.
func (c *calls) count(class client.ObjectKey) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byClass[class])
}

// start runs call for machine uid of class in its own goroutine. ctx is the
// reconcile's, which controller-runtime derives from the manager's: the
// call ends when the manager stops. A class is reconciled by one worker at
// a time, so counting and starting need no lock held in between.
func (c *calls) start(ctx context.Context, class *v1alpha1.MachineClass, uid types.UID, call func(context.Context)) {
	key := client.ObjectKeyFromObject(class)
	c.mu.Lock()
	if c.byClass[key] == nil {
		c.byClass[key] = map[types.UID]bool{}
	}
	c.byClass[key][uid] = true
	c.mu.Unlock()

	go func() {
		call(ctx)
		c.mu.Lock()
		delete(c.byClass[key], uid)
		if len(c.byClass[key]) == 0 {
			delete(c.byClass, key)
		}
		c.mu.Unlock()
		select {
		case c.ended <- event.TypedGenericEvent[*v1alpha1.MachineClass]{Object: class}:
		case <-ctx.Done():
		}
	}()
}
