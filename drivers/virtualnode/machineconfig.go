package virtualnode

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// The MachineConfig handshake as a node agent sees it (machina's
// docs/machine-config.md). The driver needs no core library, so the keys
// are spelled out here.
const (
	mcCurrentConfig       = "machineconfiguration.openshift.io/currentConfig"
	mcDesiredConfig       = "machineconfiguration.openshift.io/desiredConfig"
	mcState               = "machineconfiguration.openshift.io/state"
	mcReason              = "machineconfiguration.openshift.io/reason"
	mcDesiredDrain        = "machineconfiguration.openshift.io/desiredDrain"
	mcLastAppliedDrain    = "machineconfiguration.openshift.io/lastAppliedDrain"
	mcStateDone           = "Done"
	mcStateWorking        = "Working"
	mcStateDegraded       = "Degraded"
	mcSimulatedFailureFmt = "simulated MachineConfig update failure (virtualnode failure rate %s)"
)

// machineConfigSim plays the node agent's side of the MachineConfig
// handshake for the driver's Nodes whose class asks for it
// (AnnotationMachineConfigDuration), level-triggered on every change or beat
// of the Node: state=Working, a drain asked for (desiredDrain=drain-<c>);
// once acknowledged (lastAppliedDrain), the class's duration of "writing",
// then the uncordon asked for; once acknowledged, currentConfig=<c> and
// state=Done. With the class's failure rate the writing fails instead:
// state=Degraded with a reason, left so until desiredConfig changes or the
// state annotation is removed (machina-node-agent's retry signals).
type machineConfigSim struct {
	log *slog.Logger

	mu   sync.Mutex
	ctx  context.Context // of run; nil before
	jobs map[nodeKey]*mcJob
}

// mcJob is the simulated writing of one configuration on one Node.
type mcJob struct {
	config string
	timer  *time.Timer
	// written: the files are "on disk", the uncordon is next.
	written bool
	// failed: reported Degraded for config.
	failed bool
}

func newMachineConfigSim(log *slog.Logger) *machineConfigSim {
	return &machineConfigSim{log: log, jobs: map[nodeKey]*mcJob{}}
}

func (s *machineConfigSim) start(ctx context.Context) {
	s.mu.Lock()
	s.ctx = ctx
	s.mu.Unlock()
}

// machineConfigSettings returns the simulation settings of a Node, ok
// false when its class asks for none.
func machineConfigSettings(node *corev1.Node) (duration time.Duration, failureRate float64, ok bool) {
	return simSettings(node, AnnotationMachineConfigDuration, AnnotationMachineConfigFailureRate)
}

// observe takes the handshake's next step for node, if it has one.
func (s *machineConfigSim) observe(cl *cluster, node *corev1.Node) {
	duration, rate, enabled := machineConfigSettings(node)
	if !enabled {
		return
	}
	key := nodeKey{cl.key, node.Name}
	a := node.Annotations
	desired := a[mcDesiredConfig]

	s.mu.Lock()
	defer s.mu.Unlock()
	job := s.jobs[key]
	if job != nil && job.config != desired {
		s.dropLocked(key)
		job = nil
	}
	if desired == "" || desired == a[mcCurrentConfig] || node.DeletionTimestamp != nil || s.ctx == nil {
		return
	}
	if job == nil {
		job = &mcJob{config: desired}
		s.jobs[key] = job
	}
	if job.failed {
		if a[mcState] == mcStateDegraded {
			return // reported; waits for a retry signal
		}
		job.failed, job.written = false, false // the state was cleared: try again
	}
	drain, uncordon := "drain-"+desired, "uncordon-"+desired
	switch {
	case a[mcState] != mcStateWorking && !job.written:
		s.patchLocked(cl, node.Name, desired, map[string]*string{mcState: ptr.To(mcStateWorking), mcReason: nil}, a)
	case !job.written && a[mcLastAppliedDrain] != drain:
		if a[mcDesiredDrain] != drain {
			s.patchLocked(cl, node.Name, desired, map[string]*string{mcDesiredDrain: ptr.To(drain)}, a)
		}
	case !job.written:
		if job.timer == nil {
			job.timer = time.AfterFunc(duration, func() { s.write(cl, key, job, rate) })
			s.log.Debug("simulating a MachineConfig update", "node", node.Name, "config", desired, "duration", duration)
		}
	case a[mcLastAppliedDrain] != uncordon:
		if a[mcDesiredDrain] != uncordon {
			s.patchLocked(cl, node.Name, desired, map[string]*string{mcDesiredDrain: ptr.To(uncordon)}, a)
		}
	default:
		s.patchLocked(cl, node.Name, desired, map[string]*string{
			mcCurrentConfig: ptr.To(desired), mcState: ptr.To(mcStateDone), mcReason: nil}, a)
		s.log.Info("simulated MachineConfig update", "node", node.Name, "config", desired)
	}
}

// write ends the simulated writing: the uncordon request, or, with the
// failure rate's probability, Degraded.
func (s *machineConfigSim) write(cl *cluster, key nodeKey, job *mcJob, rate float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.jobs[key] != job {
		return // dropped meanwhile
	}
	job.timer = nil
	if rate > 0 && rand.Float64() < rate {
		job.failed = true
		reason := fmt.Sprintf(mcSimulatedFailureFmt, strconv.FormatFloat(rate, 'g', -1, 64))
		s.patchLocked(cl, key.name, job.config, map[string]*string{mcState: ptr.To(mcStateDegraded), mcReason: ptr.To(reason)}, nil)
		s.log.Info("simulated MachineConfig update failed", "node", key.name, "config", job.config, "failureRate", rate)
		return
	}
	job.written = true
	s.patchLocked(cl, key.name, job.config, map[string]*string{mcDesiredDrain: ptr.To("uncordon-" + job.config)}, nil)
}

// patchLocked sets (nil: removes) annotations of the Node with a JSON patch
// guarded by a test that desiredConfig is still config, in the background
// (the Node's next change or beat observes the outcome). have is what the
// Node is known to hold (nil: unknown, removals are then skipped: a JSON
// patch cannot remove what is not there).
func (s *machineConfigSim) patchLocked(cl *cluster, name, config string, set map[string]*string, have map[string]string) {
	ctx := s.ctx
	if ctx == nil || ctx.Err() != nil {
		return
	}
	ops := []map[string]any{{"op": "test", "path": annotationPath(mcDesiredConfig), "value": config}}
	for k, v := range set {
		switch _, has := have[k]; {
		case v == nil && has:
			ops = append(ops, map[string]any{"op": "remove", "path": annotationPath(k)})
		case v != nil:
			ops = append(ops, map[string]any{"op": "add", "path": annotationPath(k), "value": *v})
		}
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return
	}
	go func() {
		if _, err := cl.client.CoreV1().Nodes().Patch(ctx, name, types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
			s.log.Debug("a simulated MachineConfig report failed; the next change or beat retries", "node", name, "config", config, "error", err)
		}
	}()
}

func (s *machineConfigSim) forget(key nodeKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropLocked(key)
}

func (s *machineConfigSim) dropLocked(key nodeKey) {
	if job := s.jobs[key]; job != nil {
		if job.timer != nil {
			job.timer.Stop()
		}
		delete(s.jobs, key)
	}
}
