package machine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/types"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/phase"
	"github.com/machina-io/machina/core/internal/driver"
	"github.com/machina-io/machina/core/internal/driverclass"
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// Without a target cluster there is no Node whose health tells whether a
// machine's VM still runs: a machine is Available once its VM exists, and
// nothing would ever notice that the VM is gone. The VM check fills that
// gap. Every Options.VMStatusCheckPeriod (--machine-vm-statuscheck-period)
// the controller asks the driver for the VM of each Available machine
// (GetMachineStatus, the call the creation flow starts with). An answer
// NOT_FOUND is the machine's "Node is gone": the machine takes the health
// path a Running machine takes with a target cluster (reconcileUnhealthy):
// Unknown at once, Failed once it has been gone for the health timeout,
// with the freeze gate and the meltdown guard (--machine-max-replacements)
// applied, and its MachineSet replaces it. A VM found again before that
// makes the machine Available again. Any other failure of the call changes
// nothing on the machine: a driver that cannot answer says nothing about
// the VM.
//
// The checks are spread out and bounded, so that a thousand machines do
// not call the driver at once (at start, every machine is reconciled
// together): a machine's first check comes at a random moment within one
// period, later ones a period apart with ±10% jitter, and a token bucket
// (Options.VMStatusCheckRate calls per second for the whole controller)
// paces whatever is due at the same time. A machine waiting for its token
// holds no worker: it is requeued for the moment its token is due. The
// schedule lives in memory only; a check writes nothing unless the VM's
// state changed.

// reasonVMCheckFailed marks the start of a run of failed VM checks.
const reasonVMCheckFailed = "VMCheckFailed"

// vmCheck is the schedule and last answer of one machine's VM check.
type vmCheck struct {
	// next is when the next check is due.
	next time.Time
	// reserved: a token of the limiter is taken for the check at next.
	reserved bool
	// checked is when the driver last answered (OK or NOT_FOUND); gone
	// says whether that answer was NOT_FOUND.
	checked time.Time
	gone    bool
	// failing is the code of the last failed check, OK when the last check
	// got an answer; a Warning event marks the start of a run of failures.
	failing codes.Code
}

// vmChecks holds the schedules of all machines and the shared limiter.
type vmChecks struct {
	once    sync.Once
	mu      sync.Mutex
	checks  map[types.UID]vmCheck
	limiter *rate.Limiter
}

func (v *vmChecks) init(perSecond float64) {
	v.once.Do(func() {
		v.checks = map[types.UID]vmCheck{}
		v.limiter = rate.NewLimiter(rate.Limit(perSecond), max(1, int(perSecond)))
	})
}

// get returns the machine's schedule, making one when it has none: the
// first check of an Available machine at a random moment within period,
// of an Unknown one at once (it is only Unknown because its VM was gone).
func (v *vmChecks) get(uid types.UID, now time.Time, period time.Duration, current v1alpha1.MachinePhase) vmCheck {
	v.mu.Lock()
	defer v.mu.Unlock()
	c, ok := v.checks[uid]
	if !ok {
		c = vmCheck{next: now}
		if current == v1alpha1.MachineAvailable {
			c.next = now.Add(rand.N(period))
		}
		v.checks[uid] = c
	}
	return c
}

func (v *vmChecks) set(uid types.UID, c vmCheck) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.checks[uid] = c
}

// forget drops the schedule of a machine that is no longer checked.
func (v *vmChecks) forget(uid types.UID) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.checks, uid)
}

// jittered is period ±10%.
func jittered(period time.Duration) time.Duration {
	return period - period/10 + rand.N(period/5+1)
}

// reconcileVMCheck runs the VM check of an Available or Unknown machine
// when it is due, and keeps an Unknown machine whose VM is gone on the
// health path meanwhile.
func (r *Reconciler) reconcileVMCheck(ctx context.Context, s *scope) (phase.Result, error) {
	if r.Target != nil || r.Options.VMStatusCheckPeriod < 0 {
		return phase.Result{}, nil
	}
	m := s.machine
	current := m.Status.CurrentStatus.Phase
	if m.Spec.ProviderID == "" || (current != v1alpha1.MachineAvailable && current != v1alpha1.MachineUnknown) {
		r.vmChecks.forget(m.UID)
		return phase.Result{}, nil
	}
	r.vmChecks.init(r.Options.VMStatusCheckRate)
	c := r.vmChecks.get(m.UID, s.now, r.Options.VMStatusCheckPeriod, current)

	due := !s.now.Before(c.next)
	if current == v1alpha1.MachineUnknown {
		// A machine is failed on an answer given after its health timeout,
		// never on an older one: the VM is looked at once more then.
		if d, ok := r.healthDeadline(s); ok && !s.now.Before(d) && c.checked.Before(d) {
			due = true
		}
		if !due {
			if !c.gone {
				// Unknown, yet the last answer found the VM: that answer's
				// Available was not written. Check again at once.
				due = true
			} else {
				res, err := r.reconcileUnhealthy(ctx, s, vmGoneWhy(m))
				return res.Merge(phase.Result{RequeueAfter: c.next.Sub(s.now)}), err
			}
		}
	}
	if !due {
		return phase.Result{RequeueAfter: c.next.Sub(s.now)}, nil
	}
	if !c.reserved {
		if wait := r.vmChecks.limiter.ReserveN(s.now, 1).DelayFrom(s.now); wait > 0 {
			c.next, c.reserved = s.now.Add(wait), true
			r.vmChecks.set(m.UID, c)
			return phase.Result{RequeueAfter: wait}, nil
		}
	}
	c.reserved = false

	if err := r.loadClass(ctx, s); err != nil {
		c.next = s.now.Add(r.Options.MediumRetry)
		r.vmChecks.set(m.UID, c)
		return r.classProblem(s, v1alpha1.MachineOperationHealthCheck, err)
	}
	_, err := s.driver.GetMachineStatus(ctx, &driverv1alpha1.GetMachineStatusRequest{
		Machine:      machineMessage(m),
		MachineClass: driverclass.Message(s.class),
		Secrets:      s.secrets,
	})
	code := driver.Code(err)
	react := statusForHealthTable.react(code)
	if !react.proceed {
		// The driver could not answer: nothing is known about the VM, and
		// nothing changes on the machine.
		msg := status.Convert(err).Message()
		s.log.Info("VM check failed; the machine keeps its phase", "code", code.String(), "message", msg)
		if c.failing != code {
			r.warning(s, reasonVMCheckFailed, actionHealthCheck, "Cannot check VM %s: %s: %s; the machine keeps its phase", m.Spec.ProviderID, code, msg)
		}
		c.failing = code
		c.next = s.now.Add(r.Options.after(react.retry))
		r.vmChecks.set(m.UID, c)
		return phase.Result{RequeueAfter: c.next.Sub(s.now)}, nil
	}

	c.failing, c.checked, c.gone = codes.OK, s.now, code == codes.NotFound
	c.next = s.now.Add(jittered(r.Options.VMStatusCheckPeriod))
	r.vmChecks.set(m.UID, c)
	next := phase.Result{RequeueAfter: c.next.Sub(s.now)}
	if c.gone {
		res, err := r.reconcileUnhealthy(ctx, s, vmGoneWhy(m))
		return res.Merge(next), err
	}
	if current == v1alpha1.MachineUnknown {
		r.releasePermit(m)
		m.Status.UnhealthySince = nil
		setPhase(s, v1alpha1.MachineAvailable, false)
		setLastOperation(s, v1alpha1.MachineOperationHealthCheck, v1alpha1.MachineStateSuccessful, "",
			fmt.Sprintf("VM %s is there again", m.Spec.ProviderID))
		r.normal(s, reasonHealthy, actionHealthCheck, "VM %s is there again", m.Spec.ProviderID)
	}
	return next, nil
}

// vmGoneWhy is the reason an Unknown machine without a target cluster is
// unhealthy.
func vmGoneWhy(m *v1alpha1.Machine) string {
	return fmt.Sprintf("the driver does not find VM %s (GetMachineStatus answered NOT_FOUND)", m.Spec.ProviderID)
}

// healthDeadline is when an unhealthy machine's health timeout passes;
// false when it has none (not unhealthy, or the timeout is disabled).
func (r *Reconciler) healthDeadline(s *scope) (time.Time, bool) {
	since := s.machine.Status.UnhealthySince
	if since == nil || r.healthTimeoutDisabled(s) {
		return time.Time{}, false
	}
	return since.Add(r.healthTimeout(s)), true
}
