package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/machina-io/machina/bench/internal/audit"
)

// Results is everything one run measured; it is written as JSON.
type Results struct {
	Started time.Time `json:"started"`
	Host    Host      `json:"host"`
	Config  RunConfig `json:"config"`

	DriverCalls []DriverCallResult `json:"driverCalls,omitempty"`
	Ceiling     []CeilingResult    `json:"apiServerCeiling,omitempty"`
	Scenarios   []ScenarioResult   `json:"scenarios,omitempty"`
	// Errors are failures outside a scenario (a step that could not run).
	Errors []string `json:"errors,omitempty"`
}

// Host describes the machine the run happened on.
type Host struct {
	CPUs      int    `json:"cpus"`
	GoVersion string `json:"goVersion"`
}

// RunConfig is the configuration of the run that matters for reading the
// figures.
type RunConfig struct {
	Machines int `json:"machines"`
	// Fleet is the size of the second scale-up and scale-down (0: none).
	Fleet            int `json:"fleet,omitempty"`
	RollMachines     int `json:"rollMachines"`
	RollSurgePercent int `json:"rollSurgePercent"`
	InPlaceMachines  int `json:"inPlaceMachines"`
	// InPlaceUnavailablePercent is the in-place rollout's maxUnavailable.
	InPlaceUnavailablePercent int      `json:"inPlaceUnavailablePercent"`
	InPlaceDuration           string   `json:"inPlaceDuration"`
	PoolMachines              int      `json:"poolMachines"`
	PoolUnavailablePercent    int      `json:"poolUnavailablePercent"`
	PoolDuration              string   `json:"poolDuration"`
	BootDelay                 string   `json:"bootDelay"`
	HeartbeatInterval         string   `json:"heartbeatInterval"`
	ManagerArgs               []string `json:"managerArgs"`
	CeilingObjects            int      `json:"ceilingObjects"`
}

// printTable writes the results as one table (with a few sections).
func printTable(w io.Writer, r *Results) {
	// Markdown table rows, aligned: the output pastes into
	// docs/performance.md as it is.
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	header := false
	row := func(cells ...any) {
		fmt.Fprint(tw, "|")
		for _, c := range cells {
			fmt.Fprintf(tw, " %v\t|", c)
		}
		fmt.Fprintln(tw)
		if !header {
			header = true
			fmt.Fprint(tw, "|")
			for range cells {
				fmt.Fprint(tw, "---\t|")
			}
			fmt.Fprintln(tw)
		}
	}
	flush := func() {
		tw.Flush()
		header = false
	}

	fmt.Fprintf(w, "\nmachina benchmarks, %s, %d CPUs, %s\n", r.Started.Format(time.RFC3339), r.Host.CPUs, r.Host.GoVersion)
	if len(r.DriverCalls) > 0 {
		fmt.Fprintln(w, "\n1. Driver call round trip (core driver client → SDK server, trivial driver, Unix socket); target p99 < 2 ms; BenchmarkGRPCFloor: the same calls through bare grpc-go")
		row("benchmark", "calls/s", "p50 µs", "p99 µs", "allocs/call", "B/call")
		for _, d := range r.DriverCalls {
			row(strings.TrimPrefix(d.Name, "BenchmarkDriverCall/"), f0(d.CallsPerSec), f1(d.P50Micros), f1(d.P99Micros), f0(d.AllocsPerOp), f0(d.BytesPerOp))
		}
		flush()
	}
	if len(r.Scenarios) > 0 {
		fmt.Fprintf(w, "\n2-4b. Scenarios (virtualnode driver, boot delay %s); targets for scale-up of 1000: < 30 s, <= 5 Machine/Node writes per machine, manager peak RSS < 200 MiB\n", r.Config.BootDelay)
		row("scenario", "seconds", "done", "mgr writes/machine (Machine+Node)", "mgr writes/machine (all)", "mgr reads/machine", "mgr 409s", "mgr peak req/s", "mgr limiter wait ms/req", "mgr RSS MiB", "mgr CPU s", "driver CPU s", "apiserver CPU s", "etcd CPU s", "other CPU s", "host CPU busy", "load")
		for _, s := range r.Scenarios {
			per := func(n int) string {
				if s.Machines == 0 {
					return "-"
				}
				return f2(float64(n) / float64(s.Machines))
			}
			done := "yes"
			if !s.Done {
				done = "NO"
			}
			row(s.Name, f1(s.Seconds), done, per(s.ManagerRequests.MachineNodeWrites), per(s.ManagerRequests.Writes), per(s.ManagerRequests.Reads),
				s.ManagerRequests.Conflicts, s.ManagerRequests.PeakPerSecond, f1(s.ManagerLimiterMeanWaitMillis), f0(s.Manager.PeakRSSMiB), f1(s.Manager.CPUSeconds),
				f1(s.Driver.CPUSeconds), f1(s.APIServer.CPUSeconds), f1(s.Etcd.CPUSeconds), f1(s.OtherCPUSeconds), fmt.Sprintf("%.0f%%", 100*s.HostCPUBusy), f1(s.LoadAverage))
		}
		flush()
		for _, s := range r.Scenarios {
			if b, ok := s.Extra["lowerBoundSeconds"]; ok {
				fmt.Fprintf(w, "   %s: %.1f s; lower bound %.0f waves × %.1f s boot = %.1f s (%.1fx); median machine start-up %.1f s (bound at that start-up %.1f s); at most %.0f machines existed at once, terminating ones included (n + surge = %.0f)\n",
					s.Name, s.Seconds, s.Extra["waves"], s.Extra["bootDelaySeconds"], b, ratio(s.Seconds, b),
					s.Extra["medianStartUpSeconds"], s.Extra["boundAtMeasuredStartUpSeconds"], s.Extra["peakMachines"], float64(s.Machines)+s.Extra["surge"])
			}
		}
		for _, s := range r.Scenarios {
			if b, ok := s.Extra["inPlaceLowerBoundSeconds"]; ok {
				fmt.Fprintf(w, "   %s: %.1f s; lower bound %.0f waves × %.1f s update = %.1f s (%.1fx); VMs created %.0f, deleted %.0f; machines created %.0f; simulated agent writes %s per machine\n",
					s.Name, s.Seconds, s.Extra["waves"], s.Extra["updateSeconds"], b, ratio(s.Seconds, b),
					s.Extra["vmCreations"], s.Extra["vmDeletions"], s.Extra["machinesCreated"], f2(s.Extra["agentWrites"]/float64(max(s.Machines, 1))))
				fmt.Fprintf(w, "     a node held its slot %s s from selection to Running again (median; p90 %s s), the update %.1f s of it; slots held %.0f%% of the time; first selection %s s after the change\n",
					f2(s.Extra["cycleMedianSeconds"]), f2(s.Extra["cycleP90Seconds"]), s.Extra["updateSeconds"], 100*s.Extra["slotUse"], f2(s.Extra["firstSelectionSeconds"]))
			}
		}
		for _, s := range r.Scenarios {
			if b, ok := s.Extra["poolLowerBoundSeconds"]; ok {
				fmt.Fprintf(w, "   %s: %.1f s; lower bound %.0f waves × %.1f s update = %.1f s (%.1fx); node writes per node: manager %s, simulated agent %s\n",
					s.Name, s.Seconds, s.Extra["waves"], s.Extra["updateSeconds"], b, ratio(s.Seconds, b),
					f2(s.Extra["managerNodeWrites"]/float64(max(s.Machines, 1))), f2(s.Extra["agentWrites"]/float64(max(s.Machines, 1))))
			}
		}
		for _, s := range r.Scenarios {
			if !s.Done {
				fmt.Fprintf(w, "   %s NOT DONE: %s\n", s.Name, s.Error)
			}
		}
		for _, s := range r.Scenarios {
			if len(s.ManagerRequests.ByVerbResource) == 0 {
				continue
			}
			fmt.Fprintf(w, "   manager requests per machine in %s:", s.Name)
			for _, k := range audit.SortedKeys(s.ManagerRequests.ByVerbResource) {
				fmt.Fprintf(w, " %s=%s", k, f2(float64(s.ManagerRequests.ByVerbResource[k])/float64(max(s.Machines, 1))))
			}
			fmt.Fprintln(w)
		}
	}
	printFleet(w, r, row, flush)
	if len(r.Ceiling) > 0 {
		fmt.Fprintln(w, "\n5. API server write ceiling (creates with no client rate limit; same API server)")
		row("kind", "concurrency", "objects", "errors", "seconds", "creates/s", "p50 ms", "p99 ms")
		for _, c := range r.Ceiling {
			row(c.Kind, c.Concurrency, c.Objects, c.Errors, f2(c.Seconds), f0(c.PerSecond), f1(c.P50Millis), f1(c.P99Millis))
		}
		flush()
	}
	for _, e := range r.Errors {
		fmt.Fprintf(w, "error: %s\n", e)
	}
}

// writeJSON writes r to path.
func writeJSON(path string, r *Results) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

func f0(v float64) string { return fmt.Sprintf("%.0f", v) }
func f1(v float64) string { return fmt.Sprintf("%.1f", v) }
func f2(v float64) string { return fmt.Sprintf("%.2f", v) }

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
