package chaos

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// round plays the phases once on each fleet: on the virtualnode fleet a
// scale-up, a rolling update and a scale-down with the manager killed, a
// scale-up with the driver killed, and an API server outage; on the
// inmemory fleet, whose driver fails calls at the configured rate, the
// same scale-up, rolling update and scale-down with the manager killed and,
// during the rolling update, the driver too.
func (s *suite) round(ctx context.Context, round int, vn, mem *fleet) error {
	n, m := int32(s.cfg.Machines), int32(s.cfg.FaultMachines)
	phases := []phase{
		{fleet: vn, name: "scale-up", keep: true,
			change: func(ctx context.Context) error { return vn.scale(ctx, s.c, n) },
			hurt:   s.killManager(vn)},
		{fleet: vn, name: "rolling update",
			change: func(ctx context.Context) error { return vn.roll(ctx, s.c) },
			hurt:   s.killManager(vn)},
		{fleet: vn, name: "driver kill", keep: true,
			change: func(ctx context.Context) error { return vn.scale(ctx, s.c, n+(n+1)/2) },
			hurt:   s.killDriver(vn)},
		{fleet: vn, name: "API server outage", keep: true,
			hurt: s.outage},
		{fleet: vn, name: "scale-down",
			change: func(ctx context.Context) error { return vn.scale(ctx, s.c, 0) },
			hurt:   s.killManager(vn)},
		{fleet: mem, name: "faults: scale-up", keep: true,
			change: func(ctx context.Context) error { return mem.scale(ctx, s.c, m) },
			hurt:   s.killManager(mem)},
		{fleet: mem, name: "faults: rolling update",
			change: func(ctx context.Context) error { return mem.roll(ctx, s.c) },
			hurt:   both(s.killDriver(mem), s.killManager(mem))},
		{fleet: mem, name: "faults: scale-down",
			change: func(ctx context.Context) error { return mem.scale(ctx, s.c, 0) },
			hurt:   s.killManager(mem)},
	}
	for _, p := range phases {
		p.name = fmt.Sprintf("%d %s %s", round, p.fleet.name, p.name)
		row, err := s.play(ctx, p)
		if err != nil {
			return fmt.Errorf("phase %s: %w", p.name, err)
		}
		s.report.Rows = append(s.report.Rows, row)
		fmt.Fprintln(s.out, row.line())
		for _, problem := range row.Problems {
			fmt.Fprintf(s.out, "    FAIL %s\n", problem)
		}
	}
	return nil
}

// phase is one change to a fleet, the harm done while the fleet carries it
// out, and whether every machine that exists at its start must survive it.
type phase struct {
	fleet  *fleet
	name   string
	keep   bool
	change func(context.Context) error
	hurt   func(context.Context) error
}

// both runs two harms one after the other.
func both(a, b func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := a(ctx); err != nil {
			return err
		}
		return b(ctx)
	}
}

// play runs one phase and counts what it left.
func (s *suite) play(ctx context.Context, p phase) (Row, error) {
	f := p.fleet
	start := time.Now()
	exits0, kills0 := f.manager.counts()
	_, driverKills0 := f.driver.counts()
	var before census
	if err := s.wait(ctx, time.Minute, "a census before "+p.name, func(ctx context.Context) (bool, string, error) {
		var err error
		before, err = f.count(ctx, s.c)
		return err == nil, "", err
	}); err != nil {
		return Row{}, err
	}
	if p.change != nil {
		if err := p.change(ctx); err != nil {
			return Row{}, err
		}
	}
	if p.hurt != nil {
		if err := p.hurt(ctx); err != nil {
			return Row{}, err
		}
	}

	// Converge: everything the deployment asks for, nothing more.
	var after census
	converged := s.wait(ctx, s.cfg.ConvergeTimeout, p.name+" converging", func(ctx context.Context) (bool, string, error) {
		var err error
		after, err = f.count(ctx, s.c)
		return after.converged(), after.String(), err
	})
	row := Row{
		Phase: p.name, VMs: after.vms, Machines: after.machines, Nodes: after.nodes,
		Leaks: after.leaks, Duplicates: after.duplicates, Orphans: after.orphans,
		Stuck: after.unhealthy + after.missing,
	}
	if converged != nil {
		row.Problems = append(row.Problems, converged.Error())
	}
	for _, m := range s.failed.since(f.namespace, start) {
		row.Failed++
		row.Problems = append(row.Problems, "machine "+m+" went Failed")
	}
	if p.keep {
		for _, name := range before.names {
			if !slices.Contains(after.names, name) {
				row.Replaced++
				row.Problems = append(row.Problems, "machine "+name+" was replaced")
			}
		}
	}
	hits, err := searchCanary(ctx, s.c, s.logs(), s.forms)
	if err != nil {
		row.Problems = append(row.Problems, "searching for the canary: "+err.Error())
	}
	for _, h := range hits {
		row.CanaryHits++
		row.Problems = append(row.Problems, fmt.Sprintf("canary found in %s (as %q)", h.where, h.form))
	}
	exits, kills := f.manager.counts()
	_, driverKills := f.driver.counts()
	row.ManagerExits, row.ManagerKills, row.DriverKills = exits-exits0, kills-kills0, driverKills-driverKills0
	if row.ManagerExits > 0 {
		f.manager.mu.Lock()
		last := f.manager.lastExit
		f.manager.mu.Unlock()
		row.Problems = append(row.Problems, fmt.Sprintf("the manager exited by itself %d time(s), last: %s (log %s)", row.ManagerExits, last, f.manager.logPath))
	}
	if driverExits, _ := f.driver.counts(); driverExits > 0 {
		row.Problems = append(row.Problems, fmt.Sprintf("the driver exited by itself %d time(s) so far (log %s)", driverExits, f.driver.logPath))
	}
	row.Duration = time.Since(start)
	return row, nil
}

// logs are every log file of the run.
func (s *suite) logs() []string {
	paths := slices.Clone(s.cp.logs)
	for _, f := range s.fleets {
		paths = append(paths, f.manager.logPath, f.driver.logPath)
	}
	return paths
}

// randomDelay returns a delay within the kill window, from the seeded
// generator.
func (s *suite) randomDelay() time.Duration {
	return time.Duration(s.rng.Int64N(int64(s.cfg.KillWindow)))
}

// killManager kills the fleet's manager with SIGKILL ManagerKills times, at
// random points, restarting it at once each time.
func (s *suite) killManager(f *fleet) func(context.Context) error {
	return func(ctx context.Context) error {
		for range s.cfg.ManagerKills {
			sleepCtx(ctx, s.randomDelay())
			if err := f.manager.killAndRestart(); err != nil {
				return err
			}
		}
		return ctx.Err()
	}
}

// killDriver kills the fleet's driver with SIGKILL once, at a random point,
// and restarts it at once. The manager reconnects to the new socket.
func (s *suite) killDriver(f *fleet) func(context.Context) error {
	return func(ctx context.Context) error {
		sleepCtx(ctx, s.randomDelay())
		if err := f.driver.killAndRestart(); err != nil {
			return err
		}
		return ctx.Err()
	}
}

// outage stops the API server for the configured time and starts it again
// on the same port against the same etcd. The outage itself is a fixed
// time: it is the fault, not a wait for a condition.
func (s *suite) outage(ctx context.Context) error {
	start := time.Now()
	if err := s.cp.stopAPIServer(); err != nil {
		return fmt.Errorf("stopping kube-apiserver: %w", err)
	}
	// The outage counts from the stop: a slow shutdown is part of it.
	sleepCtx(ctx, s.cfg.Outage-time.Since(start))
	if err := s.cp.startAPIServer(); err != nil {
		return fmt.Errorf("starting kube-apiserver again: %w", err)
	}
	return ctx.Err()
}
