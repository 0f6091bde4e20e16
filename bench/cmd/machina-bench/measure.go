package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/machina-io/machina/bench/internal/audit"
	"github.com/machina-io/machina/bench/internal/procstat"
)

// ProcessCost is what one process used during a scenario.
type ProcessCost struct {
	CPUSeconds float64 `json:"cpuSeconds"`
	// PeakRSSMiB is the peak resident set size during the scenario.
	PeakRSSMiB float64 `json:"peakRSSMiB"`
}

// Requests are one user's API requests during a scenario.
type Requests struct {
	// ByVerbResource counts the requests keyed "verb resource", e.g.
	// "patch machines/status".
	ByVerbResource map[string]int `json:"byVerbResource"`
	// Writes counts creates, updates, patches and deletes.
	Writes int `json:"writes"`
	// MachineNodeWrites counts the writes of Machine and Node objects
	// (their status subresources included).
	MachineNodeWrites int `json:"machineNodeWrites"`
	// Reads counts gets and lists (not watches).
	Reads int `json:"reads"`
	// Conflicts counts requests answered 409 Conflict.
	Conflicts int `json:"conflicts"`
	// PeakPerSecond is the most requests within one second.
	PeakPerSecond int `json:"peakPerSecond"`
}

// ScenarioResult is one scenario's figures.
type ScenarioResult struct {
	Name string `json:"name"`
	// Machines is the number of machines the scenario is about (the
	// denominator of the per-machine figures).
	Machines int `json:"machines"`
	// Seconds is the time from the change to the state the scenario
	// waits for.
	Seconds float64 `json:"seconds"`
	// Done is false when the state was not reached; Error says why.
	Done  bool   `json:"done"`
	Error string `json:"error,omitempty"`

	// Extra holds figures of one scenario only (e.g. the rolling update's
	// lower bound).
	Extra map[string]float64 `json:"extra,omitempty"`

	Manager   ProcessCost `json:"manager"`
	Driver    ProcessCost `json:"driver"`
	APIServer ProcessCost `json:"apiServer"`
	Etcd      ProcessCost `json:"etcd"`
	// HostCPUBusy is the fraction of the machine's CPU (all cores) that
	// was busy during the scenario.
	HostCPUBusy float64 `json:"hostCPUBusy"`
	// OtherCPUSeconds is the busy CPU time of everything but the measured
	// processes and the benchmark itself: other load on a shared machine,
	// which the figures then include.
	OtherCPUSeconds float64 `json:"otherCPUSeconds"`
	// LoadAverage is the 1-minute load average at the end.
	LoadAverage float64 `json:"loadAverage"`

	// ManagerLimiterWaitSeconds is the total time the manager's requests
	// waited for its client-side rate limiter (from its
	// rest_client_rate_limiter_duration_seconds); -1 when unknown.
	ManagerLimiterWaitSeconds float64 `json:"managerLimiterWaitSeconds"`
	// ManagerLimiterMeanWaitMillis is that time per request.
	ManagerLimiterMeanWaitMillis float64 `json:"managerLimiterMeanWaitMillis"`

	ManagerRequests Requests `json:"managerRequests"`
	DriverRequests  Requests `json:"driverRequests"`
}

// ManagerWritesPerMachine is the manager's Machine and Node writes per
// machine.
func (r ScenarioResult) ManagerWritesPerMachine() float64 {
	if r.Machines == 0 {
		return 0
	}
	return float64(r.ManagerRequests.MachineNodeWrites) / float64(r.Machines)
}

// processes names the processes a scenario measures.
type processes map[string]int

// measure runs a scenario and records what it cost: time, CPU and peak
// memory of each process, host CPU, and the API requests of the manager and
// the driver from the audit log.
func (b *bench) measure(ctx context.Context, name string, machines int, run func(ctx context.Context, r *ScenarioResult) error) ScenarioResult {
	res := ScenarioResult{Name: name, Machines: machines, Extra: map[string]float64{}}
	fmt.Printf("scenario %s: running\n", name)
	procs := processes{"manager": b.manager.Pid(), "driver": b.driver.Pid(), "apiserver": b.apiserverPID, "etcd": b.etcdPID}
	before := map[string]procstat.Sample{}
	for n, pid := range procs {
		_ = procstat.ResetPeak(pid) // without it the peak is since the start: still an upper bound
		s, err := procstat.Read(pid)
		if err != nil {
			res.Error = err.Error()
			return res
		}
		before[n] = s
	}
	hostBefore, _ := procstat.ReadHost()
	selfBefore, _ := procstat.Read(os.Getpid())
	waitBefore, waitErr := scrapeLimiterWait(ctx, b.managerMetrics)
	from, err := audit.Size(b.cp.auditLog)
	if err != nil {
		res.Error = err.Error()
		return res
	}

	start := time.Now()
	runErr := run(ctx, &res)
	res.Seconds = time.Since(start).Seconds()
	res.Done = runErr == nil
	if runErr != nil {
		res.Error = runErr.Error()
	}

	hostAfter, _ := procstat.ReadHost()
	selfAfter, _ := procstat.Read(os.Getpid())
	res.ManagerLimiterWaitSeconds, res.ManagerLimiterMeanWaitMillis = -1, -1
	if waitAfter, err := scrapeLimiterWait(ctx, b.managerMetrics); err == nil && waitErr == nil {
		res.ManagerLimiterWaitSeconds = waitAfter.seconds - waitBefore.seconds
		if n := waitAfter.requests - waitBefore.requests; n > 0 {
			res.ManagerLimiterMeanWaitMillis = 1000 * res.ManagerLimiterWaitSeconds / n
		}
	}
	res.HostCPUBusy = procstat.Utilisation(hostBefore, hostAfter)
	res.LoadAverage, _ = procstat.LoadAverage()
	costs := map[string]*ProcessCost{"manager": &res.Manager, "driver": &res.Driver, "apiserver": &res.APIServer, "etcd": &res.Etcd}
	var errs []error
	for n, pid := range procs {
		s, err := procstat.Read(pid)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		costs[n].CPUSeconds = (s.CPU - before[n].CPU).Seconds()
		costs[n].PeakRSSMiB = float64(s.PeakRSS) / (1 << 20)
	}
	ours := (selfAfter.CPU - selfBefore.CPU).Seconds()
	for _, c := range costs {
		ours += c.CPUSeconds
	}
	res.OtherCPUSeconds = max(0, (hostAfter.Busy-hostBefore.Busy).Seconds()-ours)
	to, err := audit.Size(b.cp.auditLog)
	errs = append(errs, err)
	if err == nil {
		counts, err := audit.Read(b.cp.auditLog, from, to)
		errs = append(errs, err)
		if err == nil {
			res.ManagerRequests = requestsOf(counts, managerUser)
			res.DriverRequests = requestsOf(counts, driverUser)
		}
	}
	if err := errors.Join(errs...); err != nil && res.Error == "" {
		res.Error = "measuring: " + err.Error()
	}
	status := "done"
	if !res.Done {
		status = "NOT DONE: " + res.Error
	}
	fmt.Printf("scenario %s: %.1fs, %s\n", name, res.Seconds, status)
	return res
}

// requestsOf sums user's requests.
func requestsOf(c *audit.Counts, user string) Requests {
	return Requests{
		ByVerbResource: c.ByVerbResource(user),
		Writes:         c.Total(user, func(verb, _ string) bool { return audit.IsWrite(verb) }),
		MachineNodeWrites: c.Total(user, func(verb, resource string) bool {
			base, _, _ := strings.Cut(resource, "/")
			return audit.IsWrite(verb) && (base == "machines" || base == "nodes")
		}),
		Reads:         c.Total(user, func(verb, _ string) bool { return verb == "get" || verb == "list" }),
		Conflicts:     c.Conflicts[user],
		PeakPerSecond: c.PeakPerSecond(user),
	}
}
