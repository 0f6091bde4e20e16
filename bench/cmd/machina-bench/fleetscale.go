package main

import (
	"context"
	"fmt"
	"io"
	"time"
)

// scenarioFleet scales the scale-up deployment (left at 0 by the default
// scale-up and scale-down) from 0 to n machines and back, with the same
// measurements, so that the fleet table can put the --machines pair and the
// --fleet pair side by side. Its timeout grows with n: a scenario's
// --timeout is meant for --machines.
func (b *bench) scenarioFleet(ctx context.Context, n int) []ScenarioResult {
	saved := b.cfg.timeout
	b.cfg.timeout = max(saved, time.Duration(float64(saved)*float64(n)/float64(b.cfg.machines)))
	defer func() { b.cfg.timeout = saved }()
	if b.cfg.skip["scale"] {
		// The deployment does not exist yet: create it as the default
		// scale-up does.
		return []ScenarioResult{b.scenarioScaleUp(ctx, n), b.scenarioScaleDown(ctx, n)}
	}
	// A scale-down of --machines that ran out of time leaves machines
	// being deleted; they would count in this pair's figures.
	if err := b.waitGone(ctx, scaleDeployment); err != nil {
		return []ScenarioResult{{Name: scaleUpName(n), Machines: n, Error: "waiting for the scale-down before: " + err.Error()}}
	}
	up := b.measure(ctx, scaleUpName(n), n, func(ctx context.Context, r *ScenarioResult) error {
		if err := b.scaleTo(ctx, scaleDeployment, n); err != nil {
			return err
		}
		return b.waitRunning(ctx, scaleDeployment, classA, n)
	})
	return []ScenarioResult{up, b.scenarioScaleDown(ctx, n)}
}

func scaleUpName(n int) string   { return fmt.Sprintf("scale-up 0→%d", n) }
func scaleDownName(n int) string { return fmt.Sprintf("scale-down %d→0", n) }

// printFleet writes the fleet table: for each size of the scale-up and
// scale-down pairs in r (--machines and --fleet), time, the manager's writes
// per machine, its peak RSS and RSS per machine, and its CPU per machine.
// The marginal memory per machine between the two sizes is the slope of
// the peak RSS: what one more machine costs, without the manager's fixed
// part.
func printFleet(w io.Writer, r *Results, row func(...any), flush func()) {
	sizes := []int{r.Config.Machines, r.Config.Fleet}
	if r.Config.Fleet == 0 {
		return
	}
	find := func(name string) *ScenarioResult {
		for i := range r.Scenarios {
			if r.Scenarios[i].Name == name {
				return &r.Scenarios[i]
			}
		}
		return nil
	}
	fmt.Fprintf(w, "\nFleet: scale-up and scale-down of %d and %d machines side by side (manager figures)\n", sizes[0], sizes[1])
	row("machines", "scale-up s", "scale-down s", "writes/machine up (Machine+Node / all)", "writes/machine down (Machine+Node / all)",
		"peak RSS MiB", "peak RSS KiB/machine", "CPU ms/machine up", "CPU ms/machine down", "other CPU s up / down")
	var peaks [2]float64
	for i, n := range sizes {
		up, down := find(scaleUpName(n)), find(scaleDownName(n))
		if up == nil || down == nil {
			row(n, "not run", "", "", "", "", "", "", "", "")
			continue
		}
		peaks[i] = max(up.Manager.PeakRSSMiB, down.Manager.PeakRSSMiB)
		per := func(s *ScenarioResult, v float64) string { return f2(v / float64(max(s.Machines, 1))) }
		done := func(s *ScenarioResult) string {
			if s.Done {
				return f1(s.Seconds)
			}
			return f1(s.Seconds) + " (NOT DONE)"
		}
		row(n, done(up), done(down),
			per(up, float64(up.ManagerRequests.MachineNodeWrites))+" / "+per(up, float64(up.ManagerRequests.Writes)),
			per(down, float64(down.ManagerRequests.MachineNodeWrites))+" / "+per(down, float64(down.ManagerRequests.Writes)),
			f0(peaks[i]), f0(peaks[i]*1024/float64(n)),
			f1(1000*up.Manager.CPUSeconds/float64(n)), f1(1000*down.Manager.CPUSeconds/float64(n)),
			f1(up.OtherCPUSeconds)+" / "+f1(down.OtherCPUSeconds))
	}
	flush()
	if peaks[0] > 0 && peaks[1] > 0 && sizes[1] != sizes[0] {
		fmt.Fprintf(w, "   marginal manager memory per machine (peak RSS slope between %d and %d): %.0f KiB\n",
			sizes[0], sizes[1], (peaks[1]-peaks[0])*1024/float64(sizes[1]-sizes[0]))
	}
}
