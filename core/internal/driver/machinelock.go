package driver

import (
	"context"
	"sync"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// machineLocks serialises the calls for one machine. The Driver API
// promises drivers that the core sends at most one call per machine at a
// time; several workers (or a controller and a safety sweep) may otherwise
// race on one Machine. Calls for different machines do not wait for each
// other.
type machineLocks struct {
	mu    sync.Mutex
	locks map[string]*machineLock
}

// machineLock is a one-slot semaphore, so that waiting can be abandoned
// when the caller's context ends. users counts the holder and the waiters;
// the entry is dropped when it reaches zero, so the map holds only machines
// with calls in flight.
type machineLock struct {
	slot  chan struct{}
	users int
}

func newMachineLocks() *machineLocks {
	return &machineLocks{locks: make(map[string]*machineLock)}
}

// machineKey identifies a machine as namespace/name.
func machineKey(m *driverv1alpha1.Machine) string {
	return m.GetNamespace() + "/" + m.GetName()
}

// lock waits until no other call holds key and returns the function that
// releases it. It returns ctx's error if ctx ends first.
func (l *machineLocks) lock(ctx context.Context, key string) (unlock func(), err error) {
	l.mu.Lock()
	e := l.locks[key]
	if e == nil {
		e = &machineLock{slot: make(chan struct{}, 1)}
		l.locks[key] = e
	}
	e.users++
	l.mu.Unlock()

	select {
	case e.slot <- struct{}{}:
		return func() {
			<-e.slot
			l.release(key, e)
		}, nil
	case <-ctx.Done():
		l.release(key, e)
		return nil, ctx.Err()
	}
}

func (l *machineLocks) release(key string, e *machineLock) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e.users--
	if e.users == 0 {
		delete(l.locks, key)
	}
}

// users returns how many calls hold or wait for key.
func (l *machineLocks) users(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e := l.locks[key]; e != nil {
		return e.users
	}
	return 0
}
