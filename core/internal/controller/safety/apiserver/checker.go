package apiserver

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/internal/freeze"
)

// Name names the checker in logs and events.
const Name = "apiserver-safety"

// Defaults of the flags, MCM's.
const (
	// DefaultPeriod is the default of
	// --machine-safety-apiserver-statuscheck-period.
	DefaultPeriod = time.Minute
	// DefaultTimeout is the default of
	// --machine-safety-apiserver-statuscheck-timeout.
	DefaultTimeout = 30 * time.Second
)

// maxProbeTimeout bounds a single probe.
const maxProbeTimeout = 10 * time.Second

// Checker probes the API servers and freezes Gate during an outage. It is a
// manager Runnable that runs on the elected leader; build it with the
// fields below and add it with SetupWithManager.
type Checker struct {
	// Clusters are the API servers to probe: the control cluster and, when
	// it is another one, the target cluster (required).
	Clusters []Cluster
	// Gate is frozen during an outage (required); the controllers read it.
	Gate *freeze.Gate
	// Client writes the reset Machines' status in the control cluster;
	// mgr.GetClient() when nil.
	Client client.Client
	// APIReader lists the Machines to reset from the API server;
	// mgr.GetAPIReader() when nil.
	APIReader client.Reader
	// Cache is the reader the controllers use; the gate opens only once it
	// shows the resets. mgr.GetClient() when nil; without a manager, nil
	// skips the wait.
	Cache client.Reader
	// CatchUp, when set, waits until every informer cache the controllers
	// read has caught up with its API server (catchup.Tracker.Wait); the
	// gate opens only after it returned nil, so that no controller resumes
	// on a view from before the outage.
	CatchUp func(ctx context.Context, timeout time.Duration) error
	// Recorder emits HealthTimeoutReset events on reset machines; the
	// manager's (setup.Recorder) when nil.
	Recorder events.EventRecorder
	// Namespace limits the reset to the machines of one namespace; empty
	// means every namespace the manager sees.
	Namespace string
	// Period (--machine-safety-apiserver-statuscheck-period) is the time
	// between probes while all API servers answer; DefaultPeriod when zero.
	Period time.Duration
	// Timeout (--machine-safety-apiserver-statuscheck-timeout) is how long
	// an API server may be unreachable before the gate freezes;
	// DefaultTimeout when zero. Period should not be shorter.
	Timeout time.Duration
	// Registerer receives mcm_machine_controller_frozen; controller-runtime's
	// registry when nil.
	Registerer prometheus.Registerer
	// Observe, when set, is called after every round of probes. Tests use it.
	Observe func(Round)
	// Now is the clock; time.Now when nil.
	Now func() time.Time

	// mu serialises rounds and guards the fields below.
	mu      sync.Mutex
	log     logr.Logger
	probers []*prober
	frozen  prometheus.Gauge
	// down holds, per cluster name, when it was first seen unreachable in
	// the current run of failed probes.
	down map[string]time.Time
}

// Round is the outcome of one round of probes.
type Round struct {
	// Unreachable maps the clusters that did not answer to the error.
	Unreachable map[string]error
	// Frozen is the gate's state after the round.
	Frozen bool
	// Err is set when the recovery (resetting machines) failed; the gate
	// stays frozen and the next round tries again.
	Err error
}

var _ manager.Runnable = &Checker{}
var _ manager.LeaderElectionRunnable = &Checker{}

// SetupWithManager fills unset fields from mgr and adds the checker to mgr.
func (c *Checker) SetupWithManager(mgr ctrl.Manager, env setup.Env) error {
	if c.Client == nil {
		c.Client = mgr.GetClient()
	}
	if c.APIReader == nil {
		c.APIReader = mgr.GetAPIReader()
	}
	if c.Cache == nil {
		c.Cache = mgr.GetClient()
	}
	if c.Recorder == nil {
		c.Recorder = setup.Recorder(mgr, Name)
	}
	c.mu.Lock()
	err := c.init()
	c.mu.Unlock()
	if err != nil {
		return err
	}
	return mgr.Add(c)
}

// init checks the required fields and sets the defaults; it is idempotent.
// The caller holds c.mu.
func (c *Checker) init() error {
	switch {
	case len(c.Clusters) == 0:
		return errors.New("apiserver safety: Clusters is required")
	case c.Gate == nil:
		return errors.New("apiserver safety: Gate is required")
	case c.Client == nil || c.APIReader == nil:
		return errors.New("apiserver safety: Client and APIReader are required")
	}
	if c.Period <= 0 {
		c.Period = DefaultPeriod
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Registerer == nil {
		c.Registerer = ctrlmetrics.Registry
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.log.GetSink() == nil {
		c.log = ctrl.Log.WithName(Name)
	}
	if c.frozen == nil {
		g, err := newFrozenGauge(c.Registerer)
		if err != nil {
			return fmt.Errorf("apiserver safety: %w", err)
		}
		c.frozen = g
	}
	if c.probers == nil {
		probeTimeout := min(max(c.Timeout, time.Second), maxProbeTimeout)
		for _, cl := range c.Clusters {
			p, err := newProber(cl, probeTimeout)
			if err != nil {
				return fmt.Errorf("apiserver safety: %w", err)
			}
			c.probers = append(c.probers, p)
		}
	}
	if c.down == nil {
		c.down = map[string]time.Time{}
	}
	return nil
}

// NeedLeaderElection is true: only the leader's controllers consult the
// gate, and only the leader may reset machines.
func (c *Checker) NeedLeaderElection() bool { return true }

// Start probes until ctx ends: every Period while all API servers answer,
// every Timeout/5 while one does not or the gate is frozen.
func (c *Checker) Start(ctx context.Context) error {
	c.mu.Lock()
	err := c.init()
	c.mu.Unlock()
	if err != nil {
		return err
	}
	c.log.Info("API server safety check started", "period", c.Period, "timeout", c.Timeout)
	for {
		r := c.Check(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if c.Observe != nil {
			c.Observe(r)
		}
		next := c.Period
		if len(r.Unreachable) > 0 || r.Frozen {
			next = min(next, c.Timeout/5)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(next):
		}
	}
}

// Check runs one round: it probes every cluster, freezes the gate when one
// has been unreachable for longer than Timeout, and recovers (resets the
// Unknown machines, then opens the gate) when all answer again.
func (c *Checker) Check(ctx context.Context) Round {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.init(); err != nil {
		return Round{Err: err, Frozen: c.Gate.Frozen()}
	}
	now := c.Now()
	r := Round{Unreachable: map[string]error{}}
	var expired []string
	for _, p := range c.probers {
		err := p.probe(ctx)
		if err == nil {
			if since, ok := c.down[p.name]; ok {
				c.log.Info("API server reachable again", "cluster", p.name, "unreachableFor", now.Sub(since).Round(time.Millisecond))
				delete(c.down, p.name)
			}
			continue
		}
		r.Unreachable[p.name] = err
		since, ok := c.down[p.name]
		if !ok {
			since = now
			c.down[p.name] = now
			c.log.Info("API server unreachable", "cluster", p.name, "error", err.Error())
		}
		if now.Sub(since) >= c.Timeout {
			expired = append(expired, p.name)
		}
	}

	switch {
	case len(expired) > 0:
		c.freeze(expired, now)
	case len(r.Unreachable) == 0 && c.Gate.Frozen():
		r.Err = c.recover(ctx, now)
	}
	r.Frozen = c.Gate.Frozen()
	// The gate may also have been frozen by the manager, when it lost its
	// lease to an outage; the metric follows the gate.
	c.frozen.Set(boolFloat(r.Frozen))
	return r
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// freeze closes the gate because the clusters named were unreachable for
// longer than Timeout.
func (c *Checker) freeze(clusters []string, now time.Time) {
	sort.Strings(clusters)
	first := now
	for _, name := range clusters {
		if c.down[name].Before(first) {
			first = c.down[name]
		}
	}
	reason := fmt.Sprintf("%s API server unreachable since %s", strings.Join(clusters, " and "), first.UTC().Format(time.RFC3339))
	// The outage began at the first failed probe; the grace period after it
	// is as long as the whole outage.
	if c.Gate.Freeze(reason, first) {
		c.log.Info("Freezing the machine controllers: API server unreachable for longer than the timeout",
			"clusters", clusters, "timeout", c.Timeout)
	}
	c.frozen.Set(1)
}

// recover resets the Unknown machines and opens the gate once the cache
// shows the resets and every informer has caught up with its API server.
// On failure the gate stays frozen. Opening starts a grace period as long
// as the outage, during which timeouts fail no machine.
func (c *Checker) recover(ctx context.Context, now time.Time) error {
	resets, err := c.resetUnknownMachines(ctx, now)
	if err != nil {
		c.log.Error(err, "Resetting Unknown machines after the API server outage; staying frozen and retrying")
		return err
	}
	if err := c.waitForCache(ctx, resets); err != nil {
		c.log.Error(err, "Staying frozen and retrying")
		return err
	}
	if c.CatchUp != nil {
		if err := c.CatchUp(ctx, c.Timeout); err != nil {
			c.log.Error(err, "Waiting for the caches to catch up after the outage; staying frozen and retrying")
			return err
		}
	}
	opened, grace := c.Gate.UnfreezeWithGrace(c.Now())
	c.frozen.Set(0)
	if opened {
		c.log.Info("Unfroze the machine controllers: all API servers reachable and every cache caught up",
			"outage", grace.Round(time.Millisecond), "timeoutGraceUntil", c.Gate.GraceUntil().UTC().Format(time.RFC3339),
			"resetMachines", len(resets))
	}
	return nil
}
