package machineconfig

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/cmd/machina-node-agent/internal/durable"
	"github.com/machina-io/machina/cmd/machina-node-agent/internal/nodepatch"
	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
)

// driftPrefix starts the reason of a Degraded state the drift check set,
// so that the check also clears it when the file is put back.
const driftPrefix = "content drift: "

// rebootPoll is how often a node that asked for a reboot looks whether it
// happened (on a real node the agent dies with the reboot; it reads one
// small file).
const rebootPoll = time.Second

// Options configure the agent's MachineConfig side.
type Options struct {
	// Root is the node's root directory ("/host" in the DaemonSet).
	Root string
	// StateDir holds the agent's record and the originals it kept.
	StateDir string
	// DriftInterval is how often the files of the node's configuration are
	// compared with what the agent wrote.
	DriftInterval time.Duration
	// RetryInterval is the first wait before a Degraded configuration is
	// tried again; it doubles with each failure up to MaxRetryInterval.
	RetryInterval, MaxRetryInterval time.Duration
	// RebootTimeout is how long a requested reboot may take to happen.
	RebootTimeout time.Duration
	// BootIDFile is the kernel's boot ID (/proc/sys/kernel/random/boot_id):
	// a new one means the node rebooted.
	BootIDFile string
	// FIPSFile says whether the kernel runs in FIPS mode.
	FIPSFile string
	// Executor runs systemctl and the OS update command.
	Executor *Executor
	Now      func() time.Time
}

// Agent speaks the MachineConfig handshake on its own Node
// (docs/machine-config.md, "The node agent"): when desiredConfig differs
// from currentConfig it sets state=Working, works out what changes and the
// least action that activates them (actions.go), asks for a drain when
// that action needs one (desiredDrain=drain-<config>) and waits for the
// acknowledgement (lastAppliedDrain), puts files, units, SSH keys and
// kernel arguments in place under the root keeping every original it
// overwrites, runs the OS update command for the kernel type, OS image and
// extensions, activates (daemon-reload, reload, restart, or a reboot it
// waits to see), checks the disk against the configuration, asks for the
// uncordon if it was drained, and reports currentConfig=<config>,
// state=Done and the actions taken. A failure is state=Degraded, retried
// with back-off, or Unreconcilable, which waits for another configuration;
// the reason names the field. While the node is on its configuration it
// checks every DriftInterval that the files are still as written.
type Agent struct {
	client client.Client
	// reader reads MachineConfigs and pools straight from the API server:
	// the agent needs one object now and then, not a cache of all.
	reader client.Reader
	opts   Options
	// cached is the last rendered configuration read (load).
	cached *desired
	// root is the node's root, once opened (rootFS).
	root *durable.Root
	// rebootAsked is the configuration this process asked a reboot for: a
	// record of a reboot asked by an earlier process, on the same boot, is
	// a request that may never have reached systemd (the agent stopped
	// between the record and the call), and is asked again.
	rebootAsked string
}

// New returns an agent that reports through c and reads with reader.
func New(c client.Client, reader client.Reader, opts Options) *Agent {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Agent{client: c, reader: reader, opts: opts}
}

func (a *Agent) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	node := &corev1.Node{}
	if err := a.client.Get(ctx, req.NamespacedName, node); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	want := node.Annotations[mcv1.DesiredConfigAnnotation]
	if want == "" {
		return ctrl.Result{}, nil // not in a pool
	}
	log := logr.FromContextOrDiscard(ctx).WithValues("config", want)
	ctx = logr.NewContext(ctx, log)
	rec, err := loadRecord(a.opts.StateDir)
	if err != nil {
		return ctrl.Result{}, err
	}
	if want == node.Annotations[mcv1.CurrentConfigAnnotation] && rec.Pending == nil {
		if rec.Failed == "" || rec.Failed == want {
			return a.watchDrift(ctx, node, rec)
		}
		// Back on its configuration after failing on another (the pool's
		// render moved back, a bad MachineConfig was reverted): what the
		// failed attempt may have written or drained is undone by applying
		// this configuration again, which ends in Done.
		log.Info("Back on the current configuration after a failure", "failed", rec.Failed)
		rec.Applied = ""
	}

	state := node.Annotations[mcv1.StateAnnotation]
	if rec.Failed == want && (state == mcv1.MachineConfigStateDegraded || state == mcv1.MachineConfigStateUnreconcilable) {
		if state == mcv1.MachineConfigStateUnreconcilable {
			return ctrl.Result{}, nil // waits for another configuration
		}
		if wait := rec.FailedAt.Add(a.backoff(rec.Failures)).Sub(a.opts.Now()); wait > 0 {
			return ctrl.Result{RequeueAfter: wait}, nil
		}
		log.Info("Trying again", "failures", rec.Failures)
	} else if state != mcv1.MachineConfigStateWorking && rec.Applied != want {
		log.Info("Starting the update", "from", node.Annotations[mcv1.CurrentConfigAnnotation])
		return ctrl.Result{}, a.report(ctx, node, want, map[string]*string{
			mcv1.StateAnnotation: ptr(mcv1.MachineConfigStateWorking), mcv1.ReasonAnnotation: nil})
	}

	res, err := a.update(ctx, node, &rec, want)
	if err == nil || ctx.Err() != nil {
		return res, err
	}
	var transient *transientError
	if errors.As(err, &transient) {
		return ctrl.Result{}, transient.err
	}
	return a.fail(ctx, node, rec, want, err)
}

// transientError is a failure of the agent's own plumbing (the API server,
// its record), retried by the work queue rather than reported.
type transientError struct{ err error }

func (e *transientError) Error() string { return e.err.Error() }

// update carries the node to configuration want, one step per call: what
// each step needs from the outside (a drain, a reboot) ends the call, and
// the change of the Node or the timer brings the next.
func (a *Agent) update(ctx context.Context, node *corev1.Node, rec *record, want string) (ctrl.Result, error) {
	log := logr.FromContextOrDiscard(ctx)
	d, err := a.load(ctx, want)
	if err != nil {
		var nf *notFoundError
		if isRetryable(err) && !errors.As(err, &nf) {
			return ctrl.Result{}, &transientError{err}
		}
		return ctrl.Result{}, err
	}
	if rec.Applied != want {
		if err := checkFIPS(d.spec.FIPS, a.opts.FIPSFile); err != nil {
			return ctrl.Result{}, &unreconcilableError{err}
		}
		policy, err := a.policy(ctx, d)
		if err != nil {
			return ctrl.Result{}, &transientError{err}
		}
		writes, err := a.writes(d, rec)
		if err != nil {
			return ctrl.Result{}, err
		}
		changes, err := a.changes(d, rec, writes)
		if err != nil {
			return ctrl.Result{}, err
		}
		act, drain := plan(want, policy, changes)
		log.V(1).Info("Planned", "changes", describe(changes), "actions", act.Summary)
		if drain {
			if done, err := a.drainStep(ctx, node, want, mcv1.DrainRequestPrefix); !done || err != nil {
				return ctrl.Result{}, transientIf(err)
			}
		}
		log.Info("Writing the configuration", "changes", describe(changes), "actions", act.Summary)
		if err := a.apply(ctx, d, rec, writes); err != nil {
			return ctrl.Result{}, err
		}
		rec.Applied, rec.AppliedAt, rec.Pending = want, a.opts.Now().UTC(), &act
		if err := saveRecord(a.opts.StateDir, *rec); err != nil {
			return ctrl.Result{}, &transientError{err}
		}
	}
	if rec.Pending != nil {
		if res, done, err := a.activate(ctx, node, rec); !done || err != nil {
			return res, err
		}
	}
	// On disk and active; before the node takes work again, the files must
	// be what the configuration says, and the node uncordoned.
	root, err := a.rootFS()
	if err != nil {
		return ctrl.Result{}, &transientError{err}
	}
	if p, why := drift(root, rec.Managed); p != "" {
		return ctrl.Result{}, fmt.Errorf("validating %s after writing it: %s %s", want, p, why)
	}
	if drained(node) {
		if done, err := a.drainStep(ctx, node, want, mcv1.UncordonRequestPrefix); !done || err != nil {
			return ctrl.Result{}, transientIf(err)
		}
	}
	if err := a.report(ctx, node, want, map[string]*string{
		mcv1.CurrentConfigAnnotation: ptr(want), mcv1.StateAnnotation: ptr(mcv1.MachineConfigStateDone),
		mcv1.ReasonAnnotation: nil, mcv1.PostConfigActionAnnotation: nil, mcv1.LastActionsAnnotation: ptr(rec.LastActions),
	}); err != nil {
		return ctrl.Result{}, &transientError{err}
	}
	if rec.Failed != "" {
		rec.Failed, rec.Failures, rec.FailedAt = "", 0, time.Time{}
		if err := saveRecord(a.opts.StateDir, *rec); err != nil {
			return ctrl.Result{}, &transientError{err}
		}
	}
	log.Info("Update done", "actions", rec.LastActions)
	return ctrl.Result{RequeueAfter: a.opts.DriftInterval}, nil
}

func transientIf(err error) error {
	if err == nil {
		return nil
	}
	return &transientError{err}
}

// changes lists what putting writes in place changes on the node, and
// what configurations wrote that goes back to its original, each by
// origin; and the OS settings that differ from the last ones applied.
func (a *Agent) changes(d *desired, rec *record, writes []write) ([]origin, error) {
	root, err := a.rootFS()
	if err != nil {
		return nil, &transientError{err}
	}
	var out []origin
	paths := map[string]bool{}
	for _, w := range writes {
		paths[w.path] = true
		diff, err := differs(root, w)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", w.origin, err)
		}
		if diff {
			out = append(out, w.origin)
		}
	}
	managed := map[string]origin{}
	for _, m := range rec.Managed {
		managed[m.Path] = m.Origin
	}
	for _, p := range slices.Sorted(maps.Keys(rec.Originals)) {
		if paths[p] {
			continue
		}
		o, ok := managed[p]
		if !ok {
			o = origin{Kind: originFile, Name: p}
		}
		out = append(out, o)
	}
	for _, u := range rec.EnabledUnits {
		if !slices.Contains(enabledUnits(d), u) {
			out = append(out, origin{Kind: originUnit, Name: u})
		}
	}
	if fields := osSettingsOf(d.spec).changed(rec.OS); len(fields) > 0 {
		if a.opts.Executor.OSUpdateCommand == "" {
			return nil, fmt.Errorf("%s: not applied: this node agent has no --os-update-command to change the OS with (the node keeps %s)",
				strings.Join(fields, ", "), describeOS(rec.OS))
		}
		out = append(out, origin{Kind: originOS, Name: strings.Join(fields, ",")})
	}
	return out, nil
}

func describeOS(s osSettings) string {
	kt := s.KernelType
	if kt == "" {
		kt = "default"
	}
	return fmt.Sprintf("kernel %s, image %q, extensions %q", kt, s.OSImageURL, strings.Join(s.Extensions, " "))
}

// apply puts d on the node: originals kept first (and recorded before
// anything is overwritten), then every write, then what no configuration
// has any more restored, the presets of units whose enablement it no
// longer sets, and the OS update command.
func (a *Agent) apply(ctx context.Context, d *desired, rec *record, writes []write) error {
	state := a.opts.StateDir
	root, err := a.rootFS()
	if err != nil {
		return &transientError{err}
	}
	for _, w := range writes {
		if err := keepOriginal(root, state, rec, w.path); err != nil {
			return fmt.Errorf("%s: %w", w.origin, err)
		}
	}
	if err := saveRecord(state, *rec); err != nil {
		return &transientError{err}
	}
	paths := map[string]bool{}
	var managed []managedPath
	for _, w := range writes {
		if err := ctx.Err(); err != nil {
			return err
		}
		if w.origin.Kind == originSSHKey {
			if err := ensureSSHDirs(root, w.path); err != nil {
				return fmt.Errorf("passwd.users (core).sshAuthorizedKeys: %w", err)
			}
		}
		if err := put(root, w); err != nil {
			return fmt.Errorf("%s: writing %s: %w", w.origin, w.path, err)
		}
		paths[w.path] = true
		managed = append(managed, w.record())
	}
	for _, p := range slices.Sorted(maps.Keys(rec.Originals)) {
		if paths[p] {
			continue
		}
		if err := restoreOriginal(root, state, p, rec.Originals[p]); err != nil {
			return err
		}
		delete(rec.Originals, p)
		if err := saveRecord(state, *rec); err != nil {
			return &transientError{err}
		}
	}
	now := enabledUnits(d)
	for _, u := range rec.EnabledUnits {
		if !slices.Contains(now, u) {
			if err := applyPreset(root, u); err != nil {
				return fmt.Errorf("unit %s back to its preset: %w", u, err)
			}
		}
	}
	if os := osSettingsOf(d.spec); len(os.changed(rec.OS)) > 0 {
		logr.FromContextOrDiscard(ctx).Info("Running the OS update command", "wanted", describeOS(os))
		if err := a.opts.Executor.osUpdate(ctx, os.env(a.opts.Executor.Host.SeenRoot(a.opts.Root))); err != nil {
			return fmt.Errorf("%s: %w", strings.Join(os.changed(rec.OS), ", "), err)
		}
		rec.OS = os
	}
	rec.Managed, rec.EnabledUnits = managed, now
	return nil
}

// activate runs what is left of the pending activation: its systemctl
// steps in order, each recorded as done, then the reboot, which it asks for
// once and then waits to see (a new boot ID). done is false while it
// waits.
func (a *Agent) activate(ctx context.Context, node *corev1.Node, rec *record) (ctrl.Result, bool, error) {
	log := logr.FromContextOrDiscard(ctx)
	act := rec.Pending
	for len(act.Steps) > 0 {
		s := act.Steps[0]
		args := []string{s.Verb}
		if s.Unit != "" {
			args = append(args, s.Unit)
		}
		log.Info("Activating", "step", s.String())
		if err := a.opts.Executor.systemctl(ctx, args...); err != nil {
			return ctrl.Result{}, false, err
		}
		act.Steps = act.Steps[1:]
		if err := saveRecord(a.opts.StateDir, *rec); err != nil {
			return ctrl.Result{}, false, &transientError{err}
		}
	}
	if act.Reboot {
		boot, err := os.ReadFile(a.opts.BootIDFile)
		if err != nil {
			return ctrl.Result{}, false, fmt.Errorf("reading the boot ID %s: %w", a.opts.BootIDFile, err)
		}
		bootID := strings.TrimSpace(string(boot))
		switch {
		case act.BootID == "":
			if err := a.report(ctx, node, act.Config, map[string]*string{
				mcv1.PostConfigActionAnnotation: ptr(mcv1.PostConfigActionRebooting)}); err != nil {
				return ctrl.Result{}, false, &transientError{err}
			}
			act.BootID, act.RebootAskedAt = bootID, a.opts.Now().UTC()
			if err := saveRecord(a.opts.StateDir, *rec); err != nil {
				return ctrl.Result{}, false, &transientError{err}
			}
			log.Info("Rebooting the node")
			if err := a.opts.Executor.systemctl(ctx, "reboot"); err != nil {
				return ctrl.Result{}, false, err
			}
			a.rebootAsked = act.Config
			return ctrl.Result{RequeueAfter: rebootPoll}, false, nil
		case act.BootID == bootID && a.rebootAsked != act.Config:
			log.Info("Asking again for the reboot an earlier run of the agent asked for")
			if err := a.opts.Executor.systemctl(ctx, "reboot"); err != nil {
				return ctrl.Result{}, false, err
			}
			a.rebootAsked = act.Config
			return ctrl.Result{RequeueAfter: rebootPoll}, false, nil
		case act.BootID == bootID:
			if a.opts.Now().Sub(act.RebootAskedAt) > a.opts.RebootTimeout {
				act.BootID = "" // the retry asks again
				return ctrl.Result{}, false, fmt.Errorf("the reboot asked at %s did not happen within %s",
					act.RebootAskedAt.Format(time.RFC3339), a.opts.RebootTimeout)
			}
			return ctrl.Result{RequeueAfter: rebootPoll}, false, nil
		}
		log.Info("The node rebooted", "bootID", bootID)
	}
	rec.LastActions, rec.Pending = act.Summary, nil
	if err := saveRecord(a.opts.StateDir, *rec); err != nil {
		return ctrl.Result{}, false, &transientError{err}
	}
	return ctrl.Result{}, true, nil
}

// drained tells whether the node was drained for a configuration and not
// uncordoned since (by this agent's request).
func drained(node *corev1.Node) bool {
	return strings.HasPrefix(node.Annotations[mcv1.DesiredDrainAnnotation], mcv1.DrainRequestPrefix) ||
		strings.HasPrefix(node.Annotations[mcv1.LastAppliedDrainAnnotation], mcv1.DrainRequestPrefix)
}

// drainStep asks for <verb><config> (desiredDrain) and reports whether the
// core acknowledged it (lastAppliedDrain). The acknowledgement is a change
// of the Node, which brings the next reconcile.
func (a *Agent) drainStep(ctx context.Context, node *corev1.Node, config, verb string) (bool, error) {
	want := verb + config
	if node.Annotations[mcv1.LastAppliedDrainAnnotation] == want {
		return true, nil
	}
	if node.Annotations[mcv1.DesiredDrainAnnotation] != want {
		logr.FromContextOrDiscard(ctx).Info("Asking for " + strings.TrimSuffix(verb, "-"))
		return false, a.report(ctx, node, config, map[string]*string{mcv1.DesiredDrainAnnotation: ptr(want)})
	}
	return false, nil
}

// watchDrift runs while the node is on its configuration: it compares the
// files with the record, sets Degraded naming the first path that changed,
// and clears its own Degraded when the file is back as written.
func (a *Agent) watchDrift(ctx context.Context, node *corev1.Node, rec record) (ctrl.Result, error) {
	current := node.Annotations[mcv1.CurrentConfigAnnotation]
	if rec.Applied != current {
		// The node's annotations say it is on a configuration this agent
		// did not write (its record was lost, or another agent wrote it):
		// nothing to compare with. The next change of desiredConfig
		// writes and records everything.
		return ctrl.Result{}, nil
	}
	state, reason := node.Annotations[mcv1.StateAnnotation], node.Annotations[mcv1.ReasonAnnotation]
	root, err := a.rootFS()
	if err != nil {
		return ctrl.Result{}, err
	}
	path, why := drift(root, rec.Managed)
	switch {
	case path != "" && state != mcv1.MachineConfigStateUnreconcilable:
		msg := driftPrefix + path + " " + why
		if state == mcv1.MachineConfigStateDegraded && reason == msg {
			break
		}
		logr.FromContextOrDiscard(ctx).Info("Found drift", "path", path, "how", why)
		if err := a.report(ctx, node, current, map[string]*string{
			mcv1.StateAnnotation: ptr(mcv1.MachineConfigStateDegraded), mcv1.ReasonAnnotation: ptr(msg)}); err != nil {
			return ctrl.Result{}, err
		}
	case path == "" && state == mcv1.MachineConfigStateDegraded && strings.HasPrefix(reason, driftPrefix):
		logr.FromContextOrDiscard(ctx).Info("Drift gone")
		if err := a.report(ctx, node, current, map[string]*string{
			mcv1.StateAnnotation: ptr(mcv1.MachineConfigStateDone), mcv1.ReasonAnnotation: nil}); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{RequeueAfter: a.opts.DriftInterval}, nil
}

// backoff is the wait before the next try after failures failures in a
// row: RetryInterval, doubling, at most MaxRetryInterval.
func (a *Agent) backoff(failures int) time.Duration {
	wait := a.opts.RetryInterval
	for i := 1; i < failures && wait < a.opts.MaxRetryInterval; i++ {
		wait *= 2
	}
	return min(wait, a.opts.MaxRetryInterval)
}

// fail records config as failed and reports Unreconcilable (for a
// configuration no node can take) or Degraded with err as the reason; a
// Degraded configuration is tried again after the back-off.
func (a *Agent) fail(ctx context.Context, node *corev1.Node, rec record, config string, err error) (ctrl.Result, error) {
	state := mcv1.MachineConfigStateDegraded
	if !isRetryable(err) {
		state = mcv1.MachineConfigStateUnreconcilable
	}
	reason := err.Error()
	if len(reason) > mcv1.ReasonMaxLength {
		reason = reason[:mcv1.ReasonMaxLength-3] + "..."
	}
	if rec.Failed == config {
		rec.Failures++
	} else {
		rec.Failed, rec.Failures = config, 1
	}
	rec.FailedAt = a.opts.Now().UTC()
	if err := saveRecord(a.opts.StateDir, rec); err != nil {
		return ctrl.Result{}, err
	}
	logr.FromContextOrDiscard(ctx).Info("Update failed", "state", state, "reason", reason, "failures", rec.Failures)
	if err := a.report(ctx, node, config, map[string]*string{mcv1.StateAnnotation: ptr(state), mcv1.ReasonAnnotation: ptr(reason)}); err != nil {
		return ctrl.Result{}, err
	}
	if state == mcv1.MachineConfigStateUnreconcilable {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{RequeueAfter: a.backoff(rec.Failures)}, nil
}

// report sets (or, for nil, removes) node annotations with one JSON patch,
// guarded by a test that desiredConfig is still config. Annotations that
// already have the value are left out; nothing to change, nothing sent.
func (a *Agent) report(ctx context.Context, node *corev1.Node, config string, set map[string]*string) error {
	var ops []nodepatch.Op
	for _, key := range slices.Sorted(maps.Keys(set)) {
		cur, has := node.Annotations[key]
		switch v := set[key]; {
		case v == nil && has:
			ops = append(ops, nodepatch.Op{Op: "remove", Path: nodepatch.AnnotationPath(key)})
		case v != nil && (!has || cur != *v):
			ops = append(ops, nodepatch.Op{Op: "add", Path: nodepatch.AnnotationPath(key), Value: *v})
		}
	}
	if len(ops) == 0 {
		return nil
	}
	if err := nodepatch.Send(ctx, a.client, node.Name, mcv1.DesiredConfigAnnotation, config, ops); err != nil {
		return err
	}
	// The next step reads what was just written.
	for key, v := range set {
		if node.Annotations == nil {
			node.Annotations = map[string]string{}
		}
		if v == nil {
			delete(node.Annotations, key)
		} else {
			node.Annotations[key] = *v
		}
	}
	return nil
}

func ptr[T any](v T) *T { return &v }
