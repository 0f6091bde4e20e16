package virtualnode

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The in-place update protocol as a node agent sees it (machina's
// docs/in-place-updates.md). The driver needs no core library, so the keys
// are spelled out here.
const (
	conditionInPlaceUpdate   = "InPlaceUpdate"
	reasonReadyForUpdate     = "ReadyForUpdate"
	labelUpdateResult        = "node.machine.sapcloud.io/update-result"
	annotationFailedReason   = "node.machine.sapcloud.io/update-failed-reason"
	annotationDesired        = "inplace.machina.io/desired"
	annotationCurrent        = "inplace.machina.io/current"
	updateResultSuccessful   = "successful"
	updateResultFailed       = "failed"
	simulatedFailureTemplate = "simulated in-place update failure (virtualnode failure rate %s)"
)

// inPlaceSim plays the node agent of the driver's Nodes whose class asks
// for it (AnnotationInPlaceUpdateDuration): when a Node's InPlaceUpdate
// condition has reason ReadyForUpdate and its desired target differs from
// its current one, it waits the class's duration and then reports the
// result exactly as machina-node-agent does, failed with the class's
// failure rate. A Node whose result is "failed" is left alone until the
// label is removed (the agent's retry signal), or its target changes.
type inPlaceSim struct {
	log *slog.Logger

	mu   sync.Mutex
	ctx  context.Context // of run; nil before
	jobs map[nodeKey]*inPlaceJob
}

// inPlaceJob is one simulated update in progress or done.
type inPlaceJob struct {
	target string
	timer  *time.Timer
	done   bool
}

func newInPlaceSim(log *slog.Logger) *inPlaceSim {
	return &inPlaceSim{log: log, jobs: map[nodeKey]*inPlaceJob{}}
}

// start lets observed updates run; observe calls before it only record.
func (s *inPlaceSim) start(ctx context.Context) {
	s.mu.Lock()
	s.ctx = ctx
	s.mu.Unlock()
}

// inPlaceSettings returns the simulation settings of a Node, ok false when
// its class asks for none.
func inPlaceSettings(node *corev1.Node) (duration time.Duration, failureRate float64, ok bool) {
	return simSettings(node, AnnotationInPlaceUpdateDuration, AnnotationInPlaceFailureRate)
}

// simSettings reads a simulated agent's settings from the Node's
// annotations: the duration of one update (ok false when it is missing or
// is no duration: the class asks for no simulation) and the failure rate
// (0 unless a probability).
func simSettings(node *corev1.Node, durationKey, rateKey string) (duration time.Duration, failureRate float64, ok bool) {
	raw, found := node.Annotations[durationKey]
	if !found {
		return 0, 0, false
	}
	d, err := time.ParseDuration(raw)
	if err != nil || d < 0 {
		return 0, 0, false
	}
	rate, err := strconv.ParseFloat(node.Annotations[rateKey], 64)
	if err != nil || !(rate >= 0 && rate <= 1) {
		rate = 0
	}
	return d, rate, true
}

// inPlaceGate returns the target a Node asks to have applied now, or "":
// the go signal (InPlaceUpdate True with reason ReadyForUpdate) and a
// desired target. alreadyCurrent reports that the target is what the Node
// has (only the report is missing).
func inPlaceGate(node *corev1.Node) (target string, alreadyCurrent bool) {
	ready := false
	for _, c := range node.Status.Conditions {
		if c.Type == conditionInPlaceUpdate {
			ready = c.Status == corev1.ConditionTrue && c.Reason == reasonReadyForUpdate
		}
	}
	desired := node.Annotations[annotationDesired]
	if !ready || desired == "" || node.DeletionTimestamp != nil {
		return "", false
	}
	return desired, desired == node.Annotations[annotationCurrent]
}

// observe looks at a Node as the agent would on a change of it: it starts
// the simulated update of a new target, reports an already current one at
// once, and forgets a job whose go signal is gone.
func (s *inPlaceSim) observe(cl *cluster, node *corev1.Node) {
	duration, rate, enabled := inPlaceSettings(node)
	if !enabled {
		return
	}
	key := nodeKey{cl.key, node.Name}
	target, current := inPlaceGate(node)

	s.mu.Lock()
	defer s.mu.Unlock()
	job := s.jobs[key]
	if target == "" || (job != nil && job.target != target) {
		s.dropLocked(key)
		job = nil
	}
	if target == "" || s.ctx == nil {
		return
	}
	_, hadReason := node.Annotations[annotationFailedReason]
	if current {
		// Applied before (the report is missing, or the core asks again):
		// report at once, once.
		if job == nil && (node.Labels[labelUpdateResult] != updateResultSuccessful || hadReason) {
			s.jobs[key] = &inPlaceJob{target: target, done: true}
			go s.report(cl, node.Name, target, "", 0, hadReason)
		}
		return
	}
	if job != nil || node.Labels[labelUpdateResult] == updateResultFailed {
		return // running, reported, or failed and not asked again
	}
	job = &inPlaceJob{target: target}
	job.timer = time.AfterFunc(duration, func() { s.finish(cl, key, job, rate, hadReason) })
	s.jobs[key] = job
	s.log.Debug("simulating an in-place update", "node", node.Name, "target", target, "duration", duration)
}

// finish ends a simulated update: success or, with the failure rate's
// probability, failure.
func (s *inPlaceSim) finish(cl *cluster, key nodeKey, job *inPlaceJob, rate float64, hadReason bool) {
	s.mu.Lock()
	if s.jobs[key] != job {
		s.mu.Unlock()
		return // dropped meanwhile
	}
	job.done = true
	s.mu.Unlock()
	reason := ""
	if rate > 0 && rand.Float64() < rate {
		reason = fmt.Sprintf(simulatedFailureTemplate, strconv.FormatFloat(rate, 'g', -1, 64))
	}
	s.report(cl, key.name, job.target, reason, rate, hadReason)
}

// report writes the result on the Node's metadata as machina-node-agent
// does: a JSON patch guarded by a test that the Node still asks for
// target. reason "" is success, which removes the failure reason of an
// earlier try when the Node had one (hadReason).
func (s *inPlaceSim) report(cl *cluster, name, target, reason string, rate float64, hadReason bool) {
	s.mu.Lock()
	ctx := s.ctx
	s.mu.Unlock()
	if ctx == nil || ctx.Err() != nil {
		return
	}
	ops := []map[string]any{{"op": "test", "path": annotationPath(annotationDesired), "value": target}}
	if reason == "" {
		ops = append(ops,
			map[string]any{"op": "add", "path": "/metadata/labels/" + escapeKey(labelUpdateResult), "value": updateResultSuccessful},
			map[string]any{"op": "add", "path": annotationPath(annotationCurrent), "value": target})
		if hadReason {
			ops = append(ops, map[string]any{"op": "remove", "path": annotationPath(annotationFailedReason)})
		}
	} else {
		ops = append(ops,
			map[string]any{"op": "add", "path": "/metadata/labels/" + escapeKey(labelUpdateResult), "value": updateResultFailed},
			map[string]any{"op": "add", "path": annotationPath(annotationFailedReason), "value": reason})
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return
	}
	_, err = cl.client.CoreV1().Nodes().Patch(ctx, name, types.JSONPatchType, patch, metav1.PatchOptions{})
	if err != nil {
		s.log.Warn("reporting a simulated in-place update failed", "node", name, "target", target, "error", err)
		// Observed again on the Node's next change or beat.
		s.mu.Lock()
		if job := s.jobs[nodeKey{cl.key, name}]; job != nil && job.target == target {
			s.dropLocked(nodeKey{cl.key, name})
		}
		s.mu.Unlock()
		return
	}
	result := updateResultSuccessful
	if reason != "" {
		result = updateResultFailed
	}
	s.log.Info("simulated in-place update", "node", name, "target", target, "result", result, "failureRate", rate)
}

// forget drops what is known of a Node that is gone.
func (s *inPlaceSim) forget(key nodeKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropLocked(key)
}

func (s *inPlaceSim) dropLocked(key nodeKey) {
	if job := s.jobs[key]; job != nil {
		if job.timer != nil {
			job.timer.Stop()
		}
		delete(s.jobs, key)
	}
}

// escapeKey escapes a map key for a JSON pointer (RFC 6901).
func escapeKey(key string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(key)
}

func annotationPath(key string) string { return "/metadata/annotations/" + escapeKey(key) }
