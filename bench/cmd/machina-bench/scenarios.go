package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// Names of the MachineDeployments and classes of the scenarios.
const (
	scaleDeployment = "scale"
	rollDeployment  = "roll"
	classA          = "bench-a"
	classB          = "bench-b"
)

// createDeployment creates MachineDeployment name with zero machines of
// class and waits until the manager has seen it, so that the scenario that
// scales it measures machines, not the manager's first look at it.
func (b *bench) createDeployment(ctx context.Context, name, class string, maxSurge intstr.IntOrString) error {
	if err := b.client.Create(ctx, newDeployment(name, class, maxSurge)); err != nil {
		return fmt.Errorf("creating MachineDeployment %s: %w", name, err)
	}
	return waitFor(ctx, b.cfg.timeout, "MachineDeployment "+name+" observed by the manager", b.checkChildren, func() (bool, string) {
		md, err := b.tracker.deployment(ctx, name)
		if err != nil {
			return false, err.Error()
		}
		return md.Status.ObservedGeneration >= md.Generation, fmt.Sprintf("generation %d, observed %d", md.Generation, md.Status.ObservedGeneration)
	})
}

// scaleTo sets the replicas of MachineDeployment name.
func (b *bench) scaleTo(ctx context.Context, name string, n int) error {
	_, err := patchDeployment(ctx, b.client, name, fmt.Sprintf(`{"spec":{"replicas":%d}}`, n))
	return err
}

// waitRunning waits until pool has n machines, all Running, of class.
func (b *bench) waitRunning(ctx context.Context, pool, class string, n int) error {
	return waitFor(ctx, b.cfg.timeout, fmt.Sprintf("%d machines Running", n), b.checkChildren, func() (bool, string) {
		c := b.tracker.census(pool)
		return c.machines == n && c.runningByClass[class] == n,
			fmt.Sprintf("%d machines, %d Running, %d Nodes", c.machines, c.running, c.nodes)
	})
}

// waitGone waits until pool has no machines and no Node is left.
func (b *bench) waitGone(ctx context.Context, pool string) error {
	return waitFor(ctx, b.cfg.timeout, "every Machine and Node gone", b.checkChildren, func() (bool, string) {
		c := b.tracker.census(pool)
		return c.machines == 0 && c.nodes == 0, fmt.Sprintf("%d machines, %d Nodes", c.machines, c.nodes)
	})
}

// scenarioScaleUp scales MachineDeployment scale from 0 to n machines
// and waits until all are Running.
func (b *bench) scenarioScaleUp(ctx context.Context, n int) ScenarioResult {
	if err := b.createDeployment(ctx, scaleDeployment, classA, intstr.FromInt32(1)); err != nil {
		return ScenarioResult{Name: "scale-up", Machines: n, Error: err.Error()}
	}
	return b.measure(ctx, fmt.Sprintf("scale-up 0→%d", n), n, func(ctx context.Context, r *ScenarioResult) error {
		if err := b.scaleTo(ctx, scaleDeployment, n); err != nil {
			return err
		}
		return b.waitRunning(ctx, scaleDeployment, classA, n)
	})
}

// scenarioScaleDown scales MachineDeployment scale from n to 0 and waits
// until every Machine and Node is gone.
func (b *bench) scenarioScaleDown(ctx context.Context, n int) ScenarioResult {
	return b.measure(ctx, fmt.Sprintf("scale-down %d→0", n), n, func(ctx context.Context, r *ScenarioResult) error {
		if err := b.scaleTo(ctx, scaleDeployment, 0); err != nil {
			return err
		}
		return b.waitGone(ctx, scaleDeployment)
	})
}

// scenarioRoll brings MachineDeployment roll to n machines of class A
// (not measured), then changes its class to B and waits until the rollout
// is complete: n machines of class B Running, none of A left, the
// deployment's status up to date. It compares the time with the least that
// maxSurge allows: ceil(n/surge) waves of one machine start-up each
// (maxUnavailable is 0, so a wave of old machines goes only once its
// replacements run). Afterwards it scales the deployment to 0, also
// measured.
func (b *bench) scenarioRoll(ctx context.Context, n int, surgePercent int) []ScenarioResult {
	name := fmt.Sprintf("rolling update %d (maxSurge %d%%)", n, surgePercent)
	fail := func(err error) []ScenarioResult {
		return []ScenarioResult{{Name: name, Machines: n, Error: "setting up: " + err.Error()}}
	}
	if err := b.createDeployment(ctx, rollDeployment, classA, intstr.FromString(fmt.Sprintf("%d%%", surgePercent))); err != nil {
		return fail(err)
	}
	if err := b.scaleTo(ctx, rollDeployment, n); err != nil {
		return fail(err)
	}
	if err := b.waitRunning(ctx, rollDeployment, classA, n); err != nil {
		return fail(err)
	}
	fmt.Printf("scenario %s: %d machines of class %s Running\n", name, n, classA)

	surge := int(math.Ceil(float64(n) * float64(surgePercent) / 100)) // maxSurge rounds up
	waves := int(math.Ceil(float64(n) / float64(surge)))
	b.tracker.resetPeak()
	roll := b.measure(ctx, name, n, func(ctx context.Context, r *ScenarioResult) error {
		start := time.Now()
		gen, err := patchDeployment(ctx, b.client, rollDeployment, fmt.Sprintf(`{"spec":{"template":{"spec":{"class":{"name":%q}}}}}`, classB))
		if err != nil {
			return err
		}
		err = waitFor(ctx, b.cfg.timeout, "rollout complete", b.checkChildren, func() (bool, string) {
			c := b.tracker.census(rollDeployment)
			md, mdErr := b.tracker.deployment(ctx, rollDeployment)
			state := fmt.Sprintf("%d machines, %d of class %s Running, %d of class %s", c.machines, c.runningByClass[classB], classB, c.byClass[classA], classA)
			if mdErr != nil {
				return false, mdErr.Error()
			}
			return c.machines == n && c.runningByClass[classB] == n && c.nodes == n &&
				md.Status.ObservedGeneration >= gen && int(md.Status.UpdatedReplicas) == n &&
				int(md.Status.AvailableReplicas) == n && int(md.Status.Replicas) == n, state
		})
		startUps := b.tracker.startUps(classB, start)
		slices.Sort(startUps)
		median := quantile(startUps, 0.5)
		r.Extra["surge"] = float64(surge)
		r.Extra["waves"] = float64(waves)
		r.Extra["bootDelaySeconds"] = b.cfg.bootDelay.Seconds()
		r.Extra["lowerBoundSeconds"] = float64(waves) * b.cfg.bootDelay.Seconds()
		r.Extra["medianStartUpSeconds"] = median.Seconds()
		r.Extra["boundAtMeasuredStartUpSeconds"] = float64(waves) * median.Seconds()
		r.Extra["peakMachines"] = float64(b.tracker.peak())
		return err
	})
	down := b.measure(ctx, fmt.Sprintf("scale-down %d→0 (roll)", n), n, func(ctx context.Context, r *ScenarioResult) error {
		if err := b.scaleTo(ctx, rollDeployment, 0); err != nil {
			return err
		}
		return b.waitGone(ctx, rollDeployment)
	})
	return []ScenarioResult{roll, down}
}
