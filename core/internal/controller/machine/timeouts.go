package machine

import (
	"strings"
	"time"
)

// The effective timeouts of a machine: its own spec fields when set, else
// the controller's options. Every timeout is measured from a timestamp
// stored on the Machine (creationTimestamp, deletionTimestamp,
// status.unhealthySince), so no retry or phase change extends it.

func (r *Reconciler) creationTimeout(s *scope) time.Duration {
	if d, ok := r.effectiveCreationTimeout(s); ok {
		return d
	}
	if d := s.config().MachineCreationTimeout; d != nil && d.Duration > 0 {
		return d.Duration
	}
	return r.Options.CreationTimeout
}

func (r *Reconciler) healthTimeout(s *scope) time.Duration {
	if d := s.config().MachineHealthTimeout; d != nil && d.Duration > 0 {
		return d.Duration
	}
	return r.Options.HealthTimeout
}

func (r *Reconciler) drainTimeout(s *scope) time.Duration {
	if d := s.config().MachineDrainTimeout; d != nil && d.Duration >= 0 {
		return d.Duration
	}
	return r.Options.DrainTimeout
}

func (r *Reconciler) healthTimeoutDisabled(s *scope) bool {
	d := s.config().DisableHealthTimeout
	return d != nil && *d
}

// nodeConditions are the condition types that make the machine unhealthy
// when True: spec.nodeConditions (comma-separated) or --node-conditions.
func (r *Reconciler) nodeConditions(s *scope) []string {
	if c := s.config().NodeConditions; c != nil {
		var out []string
		for _, t := range strings.Split(*c, ",") {
			if t = strings.TrimSpace(t); t != "" {
				out = append(out, t)
			}
		}
		return out
	}
	return r.Options.NodeConditions
}

// creationDeadline is when a machine still being created becomes Failed.
func (r *Reconciler) creationDeadline(s *scope) time.Time {
	return s.machine.CreationTimestamp.Add(r.creationTimeout(s))
}

// creationTimedOut tells whether the creation timeout has passed.
func (r *Reconciler) creationTimedOut(s *scope) bool {
	return !s.now.Before(r.creationDeadline(s))
}
