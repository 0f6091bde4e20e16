package manager

import (
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/config"
)

// controllerOptions are the options of every controller of the manager.
//
// Each controller's work queue is controller-runtime's priority queue
// (pkg/controller/priorityqueue), stated here rather than left to the
// library's default (on in v0.25, opt-in when it was introduced): it
// queues the events of the initial list and of resyncs, which change
// nothing, behind every real change (handler.LowPriority), so that
// a restart or a resync over thousands of machines does not hold back a
// Node that just turned NotReady; requests of one priority are served
// first in, first out, and a request already queued is not queued twice.
// docs/performance.md says what it changes and what it does not.
func controllerOptions(opts Options) config.Controller {
	c := config.Controller{UsePriorityQueue: ptr.To(true)}
	if opts.skipNameValidation {
		c.SkipNameValidation = ptr.To(true)
	}
	return c
}
