package manager

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
)

// This file is the leader election. controller-runtime's own election
// ends the process when the lease is lost, and a replica restarted during
// an API server outage cannot set up its controllers, so it exits again:
// a crash loop that outlasts the outage. Here the replica keeps running:
//
//   - The election is client-go's (leaderelection.LeaderElector on a
//     Lease), with the usual guarantee: a leader that cannot renew for
//     --leader-elect-renew-deadline stops leading, before another replica
//     may take the lease after --leader-elect-lease-duration.
//   - What the leader runs is a term (term.go): new controllers over the
//     process's long-lived caches. Losing the lease ends the term and waits
//     until all its controllers have stopped; the replica then freezes the
//     gate (the outage is what made it lose the lease) and campaigns again.
//   - Its identity stays the same for the life of the process, so a
//     replica whose lease nobody took during the outage wins it back at
//     once; if another replica took it, this one waits as a standby.
//   - A new term starts its controllers only once every cache has caught
//     up with the API servers (catchup.Tracker), and the API server check
//     unfreezes the gate only after resetting the health timeouts, with a
//     grace period as long as the outage.
//   - On SIGTERM the term stops first and the lease is released after,
//     so that a standby takes over without waiting out the lease and never
//     while this replica's controllers still run. A standby releases too:
//     it may have won the lease while stopping. A lost lease is not
//     released (client-go's ReleaseOnCancel would, while the term is still
//     stopping).

// elector campaigns for the lease and runs a term while it holds it.
type elector struct {
	m    *Manager
	lock *renewClock
	// runTerm runs one term until ctx ends or the term fails.
	runTerm func(ctx context.Context) error
}

// newLeaseLock builds the Lease lock with the process's identity. It
// contacts no API server.
func newLeaseLock(cfg *rest.Config, namespace string, recorder record.EventRecorder, timeout time.Duration) (*renewClock, error) {
	cfg = rest.CopyConfig(cfg)
	// A renewal that hangs must not outlive the renew deadline.
	cfg.Timeout = timeout
	c, err := coordinationv1client.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("leader election client: %w", err)
	}
	host, err := os.Hostname()
	if err != nil {
		return nil, fmt.Errorf("leader election identity: %w", err)
	}
	return &renewClock{Interface: &resourcelock.LeaseLock{
		LeaseMeta: metav1.ObjectMeta{Namespace: namespace, Name: LeaderElectionID},
		Client:    c,
		LockConfig: resourcelock.ResourceLockConfig{
			Identity:      host + "_" + string(uuid.NewUUID()),
			EventRecorder: recorder,
		},
	}}, nil
}

// renewClock is a lock that remembers when this replica last wrote the
// lease (the last moment it knew it led), and the last outage of the API
// server it saw while campaigning or renewing.
type renewClock struct {
	resourcelock.Interface
	last atomic.Int64 // unix nanoseconds

	mu sync.Mutex
	// failingSince is when the current run of failed lease requests
	// began (zero while they succeed); outageSince is when the last
	// outage that has ended began (zero once taken).
	failingSince, outageSince time.Time
}

func (l *renewClock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	rec, raw, err := l.Interface.Get(ctx)
	l.observe(err)
	return rec, raw, err
}

func (l *renewClock) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Create(ctx, r)
	l.observe(err)
	if err == nil {
		l.last.Store(time.Now().UnixNano())
	}
	return err
}

func (l *renewClock) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Update(ctx, r)
	l.observe(err)
	if err == nil {
		l.last.Store(time.Now().UnixNano())
	}
	return err
}

// observe notes whether a lease request reached the API server: an answer
// of the API server (a conflict, not found) did, unless it is a server
// error.
func (l *renewClock) observe(err error) {
	var status apierrors.APIStatus
	reached := err == nil || (errors.As(err, &status) && status.Status().Code != 0 && status.Status().Code < http.StatusInternalServerError)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case !reached && l.failingSince.IsZero():
		l.failingSince = time.Now()
	case reached && !l.failingSince.IsZero():
		if l.outageSince.IsZero() || l.failingSince.Before(l.outageSince) {
			l.outageSince = l.failingSince
		}
		l.failingSince = time.Time{}
	}
}

// takeOutage returns when the last outage this replica saw while
// campaigning began, once.
func (l *renewClock) takeOutage() (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	since := l.outageSince
	l.outageSince = time.Time{}
	return since, !since.IsZero()
}

// lastRenewal is when this replica last wrote the lease (zero: never).
func (l *renewClock) lastRenewal() time.Time {
	if n := l.last.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// run campaigns until ctx ends. Each time it wins the lease it runs a
// term; when it loses the lease it waits for the term to stop, freezes the
// gate and campaigns again. It returns after the term has stopped and the
// lease is released.
func (e *elector) run(ctx context.Context) {
	log := e.m.log.WithName("leader-election").WithValues("identity", e.lock.Identity())
	for ctx.Err() == nil {
		led := e.campaign(ctx)
		if ctx.Err() != nil {
			return
		}
		if led {
			since := e.lock.lastRenewal()
			e.m.gate.Freeze(fmt.Sprintf("lost the leader lease (last renewed %s): control API server unreachable or another replica leads",
				since.UTC().Format(time.RFC3339)), since)
			e.m.markFrozen()
			log.Info("Lost the leader lease; the controllers have stopped, the replica stays up and campaigns again (frozen until it leads and its caches have caught up)",
				"lastRenewal", since.UTC().Format(time.RFC3339Nano))
		}
		// The election itself retries every retry period; this pause only
		// keeps a term that fails at once from spinning.
		select {
		case <-ctx.Done():
			return
		case <-time.After(e.m.opts.LeaderElectRetryPeriod):
		}
	}
}

// campaign runs one election: it waits for the lease, runs a term while
// it holds it, and returns once the term has stopped and the election has
// ended. It reports whether it led.
func (e *elector) campaign(ctx context.Context) bool {
	// The election outlives ctx until the term has stopped: the lease is
	// released (ReleaseOnCancel) only after that.
	electCtx, endElection := context.WithCancel(context.WithoutCancel(ctx))
	defer endElection()
	guard := &termGuard{done: make(chan struct{})}
	log := e.m.log.WithName("leader-election")

	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          e.lock,
		LeaseDuration: e.m.opts.LeaderElectLeaseDuration,
		RenewDeadline: e.m.opts.LeaderElectRenewDeadline,
		RetryPeriod:   e.m.opts.LeaderElectRetryPeriod,
		// client-go would release the lease as soon as renewing stops,
		// even when the lease was lost and the term is still stopping;
		// release (below) does it only on a graceful stop, after the term.
		ReleaseOnCancel: false,
		Name:            LeaderElectionID,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leadCtx context.Context) {
				if !guard.begin() {
					return
				}
				defer guard.end()
				// The term ends when the lease is lost (leadCtx) or the
				// process stops (ctx).
				termCtx, cancel := context.WithCancel(leadCtx)
				defer cancel()
				stop := context.AfterFunc(ctx, cancel)
				defer stop()
				log.Info("Leading", "identity", e.lock.Identity())
				if err := e.runTerm(termCtx); err != nil && termCtx.Err() == nil {
					log.Error(err, "The leadership term failed; giving up the lease and campaigning again")
				}
				// Whatever ended the term, leading without controllers
				// must end too.
				endElection()
			},
			OnStoppedLeading: func() {},
			OnNewLeader: func(identity string) {
				if identity != e.lock.Identity() {
					log.Info("Another replica leads", "leader", identity)
				}
			},
		},
	})
	if err != nil {
		// Only a bad configuration gets here, and Options.Validate checks
		// it; campaign again after the retry period.
		log.Error(err, "Cannot start the leader election")
		return false
	}
	electionDone := make(chan struct{})
	go func() {
		defer close(electionDone)
		le.Run(electCtx)
	}()
	select {
	case <-ctx.Done():
		// Stopping: the term first, then the election, then the lease.
		stopped := guard.closeAndWaitFor(termStopTimeout)
		endElection()
		<-electionDone
		// Release even when no term ran: a standby may win the lease
		// while it stops (the leader stopped first and released it), or
		// its winning write may have reached the API server with its
		// answer lost to the stop. release leaves a lease another replica
		// holds alone.
		if !stopped {
			log.Info("The controllers did not stop in time; keeping the lease until it expires", "waited", termStopTimeout)
		} else {
			e.release()
		}
	case <-electionDone:
		// The lease is lost (or the term gave it up): no new term may
		// start, and the running one must have stopped before anything
		// else happens.
		guard.closeAndWait()
	}
	return guard.ran()
}

// termStopTimeout bounds how long a graceful stop waits for the term's
// controllers (controller-runtime's default graceful shutdown timeout).
const termStopTimeout = 30 * time.Second

// release gives the lease up, if this replica still holds it, so that a
// standby takes over at once instead of after the lease duration (what
// client-go's ReleaseOnCancel does). The update is conditional on the
// lease read just before: a lease another replica took stays its own.
func (e *elector) release() {
	log := e.m.log.WithName("leader-election")
	ctx, cancel := context.WithTimeout(context.Background(), e.m.opts.LeaderElectRenewDeadline)
	defer cancel()
	rec, _, err := e.lock.Get(ctx)
	if err != nil {
		log.Info("Could not release the lease; it expires after the lease duration", "error", err.Error())
		return
	}
	if rec.HolderIdentity != e.lock.Identity() {
		return
	}
	now := metav1.NewTime(time.Now())
	err = e.lock.Interface.Update(ctx, resourcelock.LeaderElectionRecord{
		LeaderTransitions:    rec.LeaderTransitions,
		LeaseDurationSeconds: 1,
		RenewTime:            now,
		AcquireTime:          now,
	})
	if err != nil {
		log.Info("Could not release the lease; it expires after the lease duration", "error", err.Error())
		return
	}
	log.Info("Released the lease")
}

// termGuard orders a term's start against the end of its election: client-
// go starts OnStartedLeading in a goroutine of its own, which may run only
// after the election has ended.
type termGuard struct {
	mu      sync.Mutex
	closed  bool
	running bool
	done    chan struct{}
}

// begin reports whether the term may start; it may not once closed.
func (g *termGuard) begin() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.running = true
	return true
}

func (g *termGuard) end() { close(g.done) }

// closeAndWait lets no term start any more and waits for a running one.
func (g *termGuard) closeAndWait() {
	g.mu.Lock()
	g.closed = true
	running := g.running
	g.mu.Unlock()
	if running {
		<-g.done
	}
}

// closeAndWaitFor is closeAndWait for at most timeout; it reports whether
// no term runs any more.
func (g *termGuard) closeAndWaitFor(timeout time.Duration) bool {
	g.mu.Lock()
	g.closed = true
	running := g.running
	g.mu.Unlock()
	if !running {
		return true
	}
	select {
	case <-g.done:
		return true
	case <-time.After(timeout):
		return false
	}
}

func (g *termGuard) ran() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.running
}
