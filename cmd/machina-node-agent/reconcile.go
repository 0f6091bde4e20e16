package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// agent reconciles its own Node: it applies the target the Node asks for
// when the core gives the go signal, and reports the result.
type agent struct {
	client      client.Client
	nodeName    string
	stateDir    string
	maxAttempts int
	applier     *applier
	now         func() time.Time
}

// Reconcile runs for every change of the agent's Node (the only Node its
// cache holds). One reconcile at a time: the controller's default.
func (a *agent) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logr.FromContextOrDiscard(ctx)
	node := &corev1.Node{}
	if err := a.client.Get(ctx, req.NamespacedName, node); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	desired, current := node.Annotations[annotationDesired], node.Annotations[annotationCurrent]
	if !readyForUpdate(node) || desired == "" {
		return ctrl.Result{}, nil // no go signal
	}
	log = log.WithValues("target", desired)
	ctx = logr.NewContext(ctx, log)
	if desired == current {
		// Applied and reported before; at most the result is missing (a
		// crash between the two writes of an older agent, or a core that
		// asks again): report it, apply nothing.
		return ctrl.Result{}, a.reportSuccess(ctx, node, desired, "already current")
	}

	st, err := loadState(a.stateDir)
	if err != nil {
		return ctrl.Result{}, err
	}
	switch {
	case st.LastApplied == desired:
		// Applied in full, then stopped before the report reached the Node.
		return ctrl.Result{}, a.reportSuccess(ctx, node, desired, "applied before a restart")
	case st.Failed == desired && node.Labels[v1alpha1.LabelKeyNodeUpdateResult] == v1alpha1.LabelValueNodeUpdateFailed:
		// Failed and reported: trying again on every change of the Node
		// would turn one failure into a loop. Removing the update-result
		// label asks for another try.
		return ctrl.Result{}, nil
	}

	number := 1
	if prev := st.Attempt; prev != nil {
		// What the interrupted copy was writing when the agent died stays
		// as a temporary file beside its path, as large as the file.
		removed, err := a.applier.cleanTemps(prev.Target)
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("removing the temporary files of the interrupted attempt: %w", err)
		}
		if len(removed) > 0 {
			log.Info("Removed temporary files an interrupted attempt left", "files", removed)
		}
	}
	if prev := st.Attempt; prev != nil && prev.Target == desired {
		// An earlier attempt at this target never ended: the agent died
		// (or was stopped) while applying.
		log.Info("Found an interrupted attempt", "attempt", prev.Number, "startedAt", prev.StartedAt)
		if prev.Number >= a.maxAttempts {
			reason := fmt.Sprintf("gave up on target %s: %d attempts were interrupted before they ended (the last started at %s)",
				desired, prev.Number, prev.StartedAt.UTC().Format(time.RFC3339))
			return ctrl.Result{}, a.fail(ctx, node, st, desired, reason)
		}
		number = prev.Number + 1
	} else if prev != nil {
		log.Info("Abandoning an interrupted attempt at another target", "abandoned", prev.Target, "attempt", prev.Number)
	}

	st.Attempt = &attempt{Target: desired, Number: number, StartedAt: a.now().UTC()}
	if err := saveState(a.stateDir, st); err != nil {
		return ctrl.Result{}, err
	}
	log.Info("Applying target", "attempt", number)
	start := a.now()
	err = a.applier.apply(ctx, desired)
	var failed *updateError
	switch {
	case errors.As(err, &failed):
		log.Info("Applying target failed", "reason", failed.reason)
		return ctrl.Result{}, a.fail(ctx, node, st, desired, failed.reason)
	case err != nil:
		// Stopping: the marker stays, the next start resumes.
		return ctrl.Result{}, err
	}
	st.Attempt = nil
	st.LastApplied, st.LastAppliedAt = desired, a.now().UTC()
	st.Failed, st.FailedReason = "", ""
	if err := saveState(a.stateDir, st); err != nil {
		return ctrl.Result{}, err
	}
	log.Info("Applied target", "attempt", number, "duration", a.now().Sub(start).String())
	return ctrl.Result{}, a.reportSuccess(ctx, node, desired, "applied")
}

// fail records a failed target and reports it.
func (a *agent) fail(ctx context.Context, node *corev1.Node, st state, target, reason string) error {
	st.Attempt = nil
	st.Failed, st.FailedReason = target, reason
	if err := saveState(a.stateDir, st); err != nil {
		return err
	}
	return a.reportFailure(ctx, node, target, reason)
}

// readyForUpdate reports the core's go signal: the Node's InPlaceUpdate
// condition is True with reason ReadyForUpdate (the drain is done).
func readyForUpdate(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == v1alpha1.NodeInPlaceUpdate {
			return c.Status == corev1.ConditionTrue && c.Reason == v1alpha1.ReadyForUpdate
		}
	}
	return false
}
