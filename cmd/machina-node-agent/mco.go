package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// maxMCOReasonLength bounds the reason annotation, as MCO's daemon does.
const maxMCOReasonLength = 2000

// driftPrefix starts the reason of a Degraded state the drift check set,
// so that the check also clears it when the file is put back.
const driftPrefix = "content drift: "

// mcoAgent speaks the MachineConfig handshake on its own Node
// (docs/machine-config.md, "The node agent"): when desiredConfig differs
// from currentConfig it sets state=Working, asks for a drain
// (desiredDrain=drain-<config>) and waits for the acknowledgement
// (lastAppliedDrain), writes the rendered MachineConfig's files and units
// under the root, asks for the uncordon (desiredDrain=uncordon-<config>)
// and waits for it, then reports currentConfig=<config>, state=Done. A
// failure is state=Degraded (or Unreconcilable) with a reason. While the
// node is on its configuration it checks every driftInterval that the
// files are still as written.
type mcoAgent struct {
	client client.Client
	// reader reads MachineConfigs straight from the API server: the agent
	// needs one object now and then, not a cache of all of them.
	reader        client.Reader
	root          string
	stateDir      string
	driftInterval time.Duration
	now           func() time.Time
}

func (a *mcoAgent) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	node := &corev1.Node{}
	if err := a.client.Get(ctx, req.NamespacedName, node); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	desired := node.Annotations[mcoDesiredConfig]
	if desired == "" {
		return ctrl.Result{}, nil // not in a pool
	}
	log := logr.FromContextOrDiscard(ctx).WithValues("config", desired)
	ctx = logr.NewContext(ctx, log)
	rec, err := loadMCORecord(a.stateDir)
	if err != nil {
		return ctrl.Result{}, err
	}
	if desired == node.Annotations[mcoCurrentConfig] {
		return a.watchDrift(ctx, node, rec)
	}

	state := node.Annotations[mcoState]
	if rec.Failed == desired && (state == mcoStateDegraded || state == mcoStateUnreconcilable) {
		return ctrl.Result{}, nil // reported; waits for a new config or a cleared state
	}
	if rec.Applied != desired {
		if state != mcoStateWorking {
			log.Info("Starting the update", "from", node.Annotations[mcoCurrentConfig])
			return ctrl.Result{}, a.report(ctx, node, desired, map[string]*string{mcoState: ptr(mcoStateWorking), mcoReason: nil})
		}
		p, unreconcilable, err := a.loadPlan(ctx, desired)
		if err != nil {
			if unreconcilable {
				return ctrl.Result{}, a.fail(ctx, node, rec, desired, mcoStateUnreconcilable, err.Error())
			}
			var nf *notFoundError
			if errors.As(err, &nf) {
				return ctrl.Result{}, a.fail(ctx, node, rec, desired, mcoStateDegraded, err.Error())
			}
			return ctrl.Result{}, err
		}
		if done, err := a.drainStep(ctx, node, desired, "drain"); !done || err != nil {
			return ctrl.Result{}, err
		}
		log.Info("Writing files and units", "files", len(p.files), "units", len(p.units))
		managed, err := applyPlan(ctx, a.root, p, rec.Managed)
		if err != nil {
			if ctx.Err() != nil {
				return ctrl.Result{}, ctx.Err()
			}
			return ctrl.Result{}, a.fail(ctx, node, rec, desired, mcoStateDegraded, err.Error())
		}
		rec.Applied, rec.AppliedAt, rec.Managed, rec.Failed = desired, a.now().UTC(), managed, ""
		if err := saveMCORecord(a.stateDir, rec); err != nil {
			return ctrl.Result{}, err
		}
	}
	// On disk; before the node takes work again, the files must be what
	// the configuration says (validation), and the node uncordoned.
	if path, why := drift(a.root, rec.Managed); path != "" {
		return ctrl.Result{}, a.fail(ctx, node, rec, desired, mcoStateDegraded, fmt.Sprintf("validating %s after writing it: %s %s", desired, path, why))
	}
	if done, err := a.drainStep(ctx, node, desired, "uncordon"); !done || err != nil {
		return ctrl.Result{}, err
	}
	if err := a.report(ctx, node, desired, map[string]*string{mcoCurrentConfig: ptr(desired), mcoState: ptr(mcoStateDone), mcoReason: nil}); err != nil {
		return ctrl.Result{}, err
	}
	log.Info("Update done")
	return ctrl.Result{RequeueAfter: a.driftInterval}, nil
}

// drainStep asks for <verb>-<config> (desiredDrain) and reports whether
// the core acknowledged it (lastAppliedDrain). The acknowledgement is a
// change of the Node, which brings the next reconcile.
func (a *mcoAgent) drainStep(ctx context.Context, node *corev1.Node, config, verb string) (bool, error) {
	want := verb + "-" + config
	if node.Annotations[mcoLastAppliedDrain] == want {
		return true, nil
	}
	if node.Annotations[mcoDesiredDrain] != want {
		logr.FromContextOrDiscard(ctx).Info("Asking for a " + verb)
		return false, a.report(ctx, node, config, map[string]*string{mcoDesiredDrain: ptr(want)})
	}
	return false, nil
}

// watchDrift runs while the node is on its configuration: it compares the
// files with the record, sets Degraded naming the first path that changed,
// and clears its own Degraded when the file is back as written.
func (a *mcoAgent) watchDrift(ctx context.Context, node *corev1.Node, rec mcoRecord) (ctrl.Result, error) {
	current := node.Annotations[mcoCurrentConfig]
	if rec.Applied != current {
		// The node's annotations say it is on a configuration this agent
		// did not write (its record was lost, or another agent wrote it):
		// nothing to compare with. The next change of desiredConfig
		// writes and records everything.
		return ctrl.Result{}, nil
	}
	state, reason := node.Annotations[mcoState], node.Annotations[mcoReason]
	path, why := drift(a.root, rec.Managed)
	switch {
	case path != "" && state != mcoStateUnreconcilable:
		msg := driftPrefix + path + " " + why
		if state == mcoStateDegraded && reason == msg {
			break
		}
		logr.FromContextOrDiscard(ctx).Info("Found drift", "path", path, "how", why)
		if err := a.report(ctx, node, current, map[string]*string{mcoState: ptr(mcoStateDegraded), mcoReason: ptr(msg)}); err != nil {
			return ctrl.Result{}, err
		}
	case path == "" && state == mcoStateDegraded && strings.HasPrefix(reason, driftPrefix):
		logr.FromContextOrDiscard(ctx).Info("Drift gone")
		if err := a.report(ctx, node, current, map[string]*string{mcoState: ptr(mcoStateDone), mcoReason: nil}); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{RequeueAfter: a.driftInterval}, nil
}

// fail records config as failed and reports state with reason.
func (a *mcoAgent) fail(ctx context.Context, node *corev1.Node, rec mcoRecord, config, state, reason string) error {
	if len(reason) > maxMCOReasonLength {
		reason = reason[:maxMCOReasonLength-3] + "..."
	}
	rec.Failed = config
	if err := saveMCORecord(a.stateDir, rec); err != nil {
		return err
	}
	logr.FromContextOrDiscard(ctx).Info("Update failed", "state", state, "reason", reason)
	return a.report(ctx, node, config, map[string]*string{mcoState: ptr(state), mcoReason: ptr(reason)})
}

// report sets (or, for nil, removes) node annotations with one JSON patch,
// guarded by a test that desiredConfig is still config: a report never
// lands on a Node that was given another configuration since it was read.
// Annotations that already have the value are left out; nothing to change,
// nothing sent.
func (a *mcoAgent) report(ctx context.Context, node *corev1.Node, config string, set map[string]*string) error {
	ops := []jsonPatchOp{{Op: "test", Path: annotationPath(mcoDesiredConfig), Value: config}}
	for _, key := range slices.Sorted(maps.Keys(set)) {
		cur, has := node.Annotations[key]
		switch v := set[key]; {
		case v == nil && has:
			ops = append(ops, jsonPatchOp{Op: "remove", Path: annotationPath(key)})
		case v != nil && (!has || cur != *v):
			ops = append(ops, jsonPatchOp{Op: "add", Path: annotationPath(key), Value: *v})
		}
	}
	if len(ops) == 1 {
		return nil
	}
	data, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	patched := &corev1.Node{}
	patched.Name = node.Name
	if err := a.client.Patch(ctx, patched, client.RawPatch(types.JSONPatchType, data)); err != nil {
		if isConflict(err) {
			return fmt.Errorf("node %s changed while reporting on %s; reading it again: %w", node.Name, config, err)
		}
		return fmt.Errorf("reporting on node %s: %w", node.Name, err)
	}
	return nil
}

// notFoundError is a rendered MachineConfig that does not exist.
type notFoundError struct{ name string }

func (e *notFoundError) Error() string {
	return fmt.Sprintf("rendered MachineConfig %s not found", e.name)
}

// isNotFound wraps the API server's NotFound for name.
func isNotFound(err error, name string) error {
	if apierrors.IsNotFound(err) {
		return &notFoundError{name: name}
	}
	return fmt.Errorf("reading MachineConfig %s: %w", name, err)
}

func ptr[T any](v T) *T { return &v }
