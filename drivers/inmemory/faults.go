package inmemory

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Fault is a failure injected into one RPC of the driver.
//
// A fault fires on a call when the call passes its Every and Rate filters.
// When it fires, the call first waits Latency (ending early with
// DEADLINE_EXCEEDED or CANCELLED if the call's context ends first) and then,
// unless Code is OK, fails with Code. With After set, the RPC takes effect
// before the fault fires: a CreateMachine creates its VM and then the caller
// sees the error, as when an answer is lost on the way back.
type Fault struct {
	// Code is the gRPC code the call fails with; OK injects latency only.
	Code codes.Code
	// Message is the error message; "injected fault in <method>" when empty.
	Message string
	// Rate is the probability that a call passing Every fires the fault.
	// 0 and 1 both mean every such call. Draws come from a generator seeded
	// with Seed, so a sequence of calls behaves the same on every run.
	Rate float64
	// Seed seeds the generator for Rate; 1 when 0.
	Seed uint64
	// Every, when positive, limits the fault to every Every-th call of the
	// method, counted from when the fault was set.
	Every int
	// Count, when positive, removes the fault after it fired Count times:
	// "fail the next Count calls".
	Count int
	// Latency delays the call when the fault fires.
	Latency time.Duration
	// After makes the fault fire after the RPC took effect.
	After bool
}

// validate reports whether f can be injected.
func (f Fault) validate() error {
	if f.Code > codes.Unauthenticated {
		return fmt.Errorf("code %d is not a gRPC code", f.Code)
	}
	// Written so that NaN fails too: every comparison with NaN is false,
	// and a NaN rate would otherwise fire on every call.
	if !(f.Rate >= 0 && f.Rate <= 1) {
		return fmt.Errorf("rate %v is not within 0..1", f.Rate)
	}
	if f.Every < 0 {
		return fmt.Errorf("every %d is negative", f.Every)
	}
	if f.Count < 0 {
		return fmt.Errorf("count %d is negative", f.Count)
	}
	if f.Latency < 0 {
		return fmt.Errorf("latency %v is negative", f.Latency)
	}
	return nil
}

// activeFault is a Fault with its counters and random generator.
type activeFault struct {
	Fault
	rng   *rand.Rand
	calls int
	fired int
}

func newActiveFault(f Fault) *activeFault {
	seed := f.Seed
	if seed == 0 {
		seed = 1
	}
	return &activeFault{Fault: f, rng: rand.New(rand.NewPCG(seed, seed))}
}

// observe counts one call and reports whether the fault fires on it, and
// whether it is used up afterwards. The caller holds the driver's lock.
func (a *activeFault) observe() (fire, usedUp bool) {
	a.calls++
	if a.Every > 0 && a.calls%a.Every != 0 {
		return false, false
	}
	if a.Rate > 0 && a.Rate < 1 && a.rng.Float64() >= a.Rate {
		return false, false
	}
	a.fired++
	return true, a.Count > 0 && a.fired >= a.Count
}

// inject waits the fault's latency and returns its error, if any.
func (f Fault) inject(ctx context.Context, method string) error {
	if f.Latency > 0 {
		timer := time.NewTimer(f.Latency)
		defer timer.Stop()
		select {
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-timer.C:
		}
	}
	if f.Code == codes.OK {
		return nil
	}
	msg := f.Message
	if msg == "" {
		msg = "injected fault in " + method
	}
	return status.Error(f.Code, msg)
}

// SetFault injects f into the RPC named method ("CreateMachine", "Probe",
// ...; "*" for every RPC without a fault of its own), replacing any fault
// it had. It panics when method is unknown or f is invalid: both are
// programming errors in a test.
func (d *Driver) SetFault(method string, f Fault) {
	if err := checkFault(method, f); err != nil {
		panic("inmemory: SetFault: " + err.Error())
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.faults[method] = newActiveFault(f)
}

// ClearFaults removes every injected fault.
func (d *Driver) ClearFaults() {
	d.mu.Lock()
	defer d.mu.Unlock()
	clear(d.faults)
}

// checkFault validates a fault and the method it is injected into.
func checkFault(method string, f Fault) error {
	if method != AnyMethod && !isMethod(method) {
		return fmt.Errorf("unknown method %q", method)
	}
	if err := f.validate(); err != nil {
		return fmt.Errorf("fault for %s: %w", method, err)
	}
	return nil
}

// nextFault counts a call of method against its fault (or the "*" fault)
// and returns the fault if it fires. The caller holds the driver's lock.
func (d *Driver) nextFault(method string) (Fault, bool) {
	key := method
	a, ok := d.faults[key]
	if !ok {
		key = AnyMethod
		if a, ok = d.faults[key]; !ok {
			return Fault{}, false
		}
	}
	fire, usedUp := a.observe()
	if usedUp {
		delete(d.faults, key)
	}
	return a.Fault, fire
}
