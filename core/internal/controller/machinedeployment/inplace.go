package machinedeployment

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/disruption"
	"github.com/machina-io/machina/core/internal/inplace"
)

// Reasons of the InPlaceUpdate strategy.
const (
	// ReasonInPlaceUpdateUnsupported (Progressing, False): the manager runs
	// without a target cluster, so there are no nodes to update in place.
	ReasonInPlaceUpdateUnsupported = "InPlaceUpdateUnsupported"
	// ReasonInPlaceUpdateFailed (Progressing, False): the in-place update of
	// machines of the rollout failed; the message names them, why, and what
	// happens to them (replaced in Auto, left for the user in Manual).
	ReasonInPlaceUpdateFailed = "InPlaceUpdateFailed"
	// reasonInPlaceReplacing is the Warning event of a machine replaced
	// because its in-place update failed for good.
	reasonInPlaceReplacing = "ReplacingFailedInPlaceUpdate"
	// reasonInPlaceMoved is the Normal event of machines moved to the new set.
	reasonInPlaceMoved = "MovedUpdatedMachines"
)

// inPlaceMessagePrefix starts the part of the Progressing message that
// reports the in-place rollout; it is replaced on every sync.
const inPlaceMessagePrefix = " In place: "

// inPlaceUpdate is the InPlaceUpdate strategy (docs/in-place-updates.md):
// the machines of old sets are drained, updated by their node's agent and
// moved to the new set, instead of being replaced. Which nodes go next is
// the engine's arithmetic (core/internal/inplace) in Auto, the user's
// choice in Manual.
type inPlaceUpdate struct{}

// bounds requires spec.strategy.inPlaceUpdate with an orchestrationType of
// Auto or Manual (MCM has no defaults for them either); Manual has no surge.
func (inPlaceUpdate) bounds(d *v1alpha1.MachineDeployment) (int32, int32, bool, error) {
	ip := d.Spec.Strategy.InPlaceUpdate
	if ip == nil {
		return 0, 0, true, errors.New("strategy type InPlaceUpdate needs spec.strategy.inPlaceUpdate with an orchestrationType (Auto or Manual)")
	}
	switch ip.OrchestrationType {
	case v1alpha1.OrchestrationTypeAuto, v1alpha1.OrchestrationTypeManual:
	default:
		return 0, 0, true, fmt.Errorf("inPlaceUpdate.orchestrationType %q is not supported (supported: Auto, Manual)", ip.OrchestrationType)
	}
	s, u, err := updateBounds(&ip.UpdateConfiguration, d.Spec.Replicas)
	if ip.OrchestrationType == v1alpha1.OrchestrationTypeManual {
		s = 0
	}
	return s, u, true, err
}

func (inPlaceUpdate) rollout(ctx context.Context, r *Reconciler, s *scope) error {
	return r.rolloutInPlace(ctx, s)
}

// afterStatus runs after the rollout's status is computed: it reports a
// missing target cluster, failed in-place updates, and the in-place counts
// in the Progressing message.
//
// While failed machines remain (or, in Auto, after some were replaced and
// until the rollout to the same set completes) Progressing is False with
// reason InPlaceUpdateFailed, naming them: like Kubernetes'
// ProgressDeadlineExceeded, a client such as `rollout status` learns at
// once that the rollout did not go as planned. A running rollout never
// keeps the NewMachineSetAvailable of the rollout before it (a rollback to
// a set that had completed would otherwise say it "successfully
// progressed").
func (inPlaceUpdate) afterStatus(_ *Reconciler, s *scope) {
	st := &s.d.Status
	ip := s.inPlace
	if ip != nil && ip.unsupported {
		setCondition(st, newCondition(v1alpha1.MachineDeploymentProgressing, v1alpha1.ConditionFalse, ReasonInPlaceUpdateUnsupported,
			"In-place updates need the nodes of the target cluster, and the manager runs with --target-kubeconfig=none: nothing is rolled out", s.now))
		return
	}
	if ip != nil && ip.running && s.new != nil {
		prefix := fmt.Sprintf("In-place rollout to machine set %q: ", s.new.Name)
		switch prev := ip.prevProgressing; {
		case len(ip.failures) > 0:
			setProgressing(st, v1alpha1.ConditionFalse, ReasonInPlaceUpdateFailed, prefix+strings.Join(ip.failures, " "), s.now)
		case ip.auto && prev != nil && prev.Reason == ReasonInPlaceUpdateFailed && strings.HasPrefix(prev.Message, prefix):
			// The failed machines were replaced; the condition keeps saying so
			// until this rollout completes.
			base, _, _ := strings.Cut(prev.Message, inPlaceMessagePrefix)
			setProgressing(st, v1alpha1.ConditionFalse, ReasonInPlaceUpdateFailed, base, s.now)
		default:
			if c := getCondition(st, v1alpha1.MachineDeploymentProgressing); c == nil || c.Reason == ReasonNewMachineSetAvailable || c.Reason == ReasonInPlaceUpdateFailed {
				setProgressing(st, v1alpha1.ConditionTrue, ReasonMachineSetUpdated, fmt.Sprintf("Machine set %q is progressing.", s.new.Name), s.now)
			}
		}
	}
	c := getCondition(st, v1alpha1.MachineDeploymentProgressing)
	if c == nil {
		return
	}
	base, _, _ := strings.Cut(c.Message, inPlaceMessagePrefix)
	msg := base
	if ip != nil && ip.running {
		msg += inPlaceMessagePrefix + ip.summary()
	}
	if msg != c.Message {
		c.Message = msg
		c.LastUpdateTime = metav1.NewTime(s.now)
	}
}

// setProgressing sets the Progressing condition; unlike setCondition it
// also takes a new message for the same status and reason (the in-place
// message names machines that change from sync to sync). The transition
// time moves only with the status.
func setProgressing(st *v1alpha1.MachineDeploymentStatus, status v1alpha1.ConditionStatus, reason, message string, now time.Time) {
	c := getCondition(st, v1alpha1.MachineDeploymentProgressing)
	if c != nil && c.Status == status && c.Reason == reason {
		if base, _, _ := strings.Cut(c.Message, inPlaceMessagePrefix); base != message {
			c.Message = message
			c.LastUpdateTime = metav1.NewTime(now)
		}
		return
	}
	setCondition(st, newCondition(v1alpha1.MachineDeploymentProgressing, status, reason, message, now))
}

// inPlaceState is what a sync of an in-place rollout found, for the status.
type inPlaceState struct {
	// unsupported is set when a template change waits because there is no
	// target cluster.
	unsupported bool
	running     bool
	// auto is orchestrationType Auto.
	auto   bool
	counts inplace.Counts
	// failures name the failed machines of this sync, why, and what happens
	// to them: replaced (Auto), or left for the user (Manual).
	failures []string
	// held says why each node the selection passed over may not be
	// disrupted now (machina.io/do-not-disrupt).
	held []string
	// prevProgressing is the Progressing condition before this sync.
	prevProgressing *v1alpha1.MachineDeploymentCondition
}

func (st *inPlaceState) summary() string {
	c := st.counts
	msg := fmt.Sprintf("%d candidates, %d selected, %d updated, %d failed.", c.Candidates, c.Selected, c.Updated, c.Failed)
	if len(st.held) > 0 {
		msg += " Not selected yet: " + strings.Join(st.held, "; ") + "."
	}
	return msg
}

// machineNode is a machine of a rollout's set with its node (nil when it has
// none yet, or the node is gone).
type machineNode struct {
	ms   *v1alpha1.MachineSet
	m    *v1alpha1.Machine
	node *corev1.Node
}

// rolloutInPlace takes one step of an in-place rollout:
//  1. the new set exists; old sets carry scale-up-disabled, the new one
//     does not; nodes of old sets are candidates with the new set's name as
//     their target, nodes moved to the new set are cleaned up;
//  2. old sets shrink to the machines they still have, the new set grows to
//     the machines it has and by the engine's NewReplicas (the surge, or
//     machines missing altogether);
//  3. machines whose update failed are named in the Progressing
//     condition, and in Auto replaced at once;
//  4. updated machines move to the new set (one merge patch each), their
//     nodes are uncordoned, old sets shrink and the new one grows by as
//     many;
//  5. once the new set is full the old sets go to zero, else in Auto more
//     nodes are selected within the budget.
func (r *Reconciler) rolloutInPlace(ctx context.Context, s *scope) error {
	if r.Target == nil {
		if s.oldMachinesLeft() {
			// A template change cannot be rolled without nodes: afterStatus
			// reports it, and nothing is created or changed.
			s.inPlace = &inPlaceState{unsupported: true}
			return nil
		}
		// Nothing to update in place: the deployment's one set just follows
		// its replicas.
		newMS, err := r.getNewMachineSet(ctx, s, true)
		if err != nil {
			return err
		}
		err = r.scaleMachineSet(ctx, s, newMS, s.d.Spec.Replicas)
		return err
	}
	newMS, err := r.getNewMachineSet(ctx, s, true)
	if err != nil {
		return err
	}
	// Machines this controller moved that the cache still shows in their
	// old set are taken where they are.
	r.moved.apply(s)
	state := &inPlaceState{running: s.oldMachinesLeft(), auto: s.d.Spec.Strategy.InPlaceUpdate.OrchestrationType == v1alpha1.OrchestrationTypeAuto}
	if c := getCondition(&s.d.Status, v1alpha1.MachineDeploymentProgressing); c != nil {
		state.prevProgressing = c.DeepCopy()
	}
	s.inPlace = state
	// The rollout's marks go on first, the candidates' with them (one
	// write per node); the machines are loaded after, with the nodes as
	// written. The candidates of a first sync beyond the first wave wait
	// until after the selection (firstwave.go).
	deferred, err := r.deferredCandidates(ctx, s)
	if err != nil {
		return err
	}
	if err := r.syncRolloutNodesWith(ctx, s, candidateMark(s, newMS.Name), deferred); err != nil {
		return err
	}
	old, err := r.loadMachines(ctx, s, s.old)
	if err != nil {
		return err
	}
	current, err := r.loadMachines(ctx, s, []*v1alpha1.MachineSet{newMS})
	if err != nil {
		return err
	}
	stale := staleMachines(current, newMS.Name)
	state.running = state.running || len(stale) > 0
	for _, om := range append(slices.Clone(old), stale...) {
		if om.node != nil {
			state.counts.Add(om.node)
		}
	}
	// The sets' replicas follow their machines before any set may scale
	// up again: a rollback right after a move (whose scaling did not get
	// written) must not make the set that is new again create a machine.
	if err := r.sizeInPlaceSets(ctx, s, old); err != nil {
		return err
	}
	if err := r.syncScaleUpDisabled(ctx, s, state.running); err != nil {
		return err
	}
	marked, err := r.syncCurrentMachines(ctx, s, current, stale)
	if err != nil {
		return err
	}
	if err := r.stripOldMarkers(ctx, old); err != nil {
		return err
	}
	if err := r.markCandidates(ctx, s, old, newMS.Name, deferred); err != nil {
		return err
	}
	// Before the moves: a sync that moves machines must still name the
	// failed ones in the condition.
	if err := r.replaceFailedInPlace(ctx, s, append(slices.Clone(old), current...)); err != nil {
		return err
	}
	// The step goes on after moves: the moved machines' nodes are no
	// longer candidates, the new set's replicas count them, and the
	// machines that turned Running since the last sync free their slots of
	// the budget now. A sync that stopped here would select nothing while
	// the machines of a wave keep reporting, one after another, and the
	// next wave would start only after the last of them.
	if _, err := r.moveUpdatedMachines(ctx, s, old); err != nil {
		return err
	}
	d := s.d
	candidates := append(slices.Clone(old), stale...)
	if newMS.Spec.Replicas >= d.Spec.Replicas {
		// The new set is full (the surge made it so): old machines are
		// surplus, deleted rather than updated. Its own stale machines
		// are still updated.
		for _, ms := range active(s.old) {
			if err := r.scaleMachineSet(ctx, s, ms, 0); err != nil {
				return err
			}
		}
		candidates = stale
	}
	if d.Spec.Strategy.InPlaceUpdate.OrchestrationType == v1alpha1.OrchestrationTypeAuto {
		if err := r.selectForUpdate(ctx, s, candidates, int32(len(stale))); err != nil {
			return err
		}
	}
	// The next wave's selection did not wait for the rest.
	if err := r.markDeferred(ctx, s, newMS.Name, deferred); err != nil {
		return err
	}
	if err := r.removeTransferMarkers(ctx, marked); err != nil {
		return err
	}
	if !state.running && deploymentComplete(d, &d.Status) {
		return r.cleanupHistory(ctx, s)
	}
	return nil
}

// syncScaleUpDisabled keeps scale-up-disabled=true on the old sets while
// the rollout runs, and takes it off every other set (the new one, which a
// rollback may have made of an old one, and all of them once the rollout is
// complete). MCM never removes it.
func (r *Reconciler) syncScaleUpDisabled(ctx context.Context, s *scope, running bool) error {
	for _, ms := range s.sets {
		want := running && (s.new == nil || ms.UID != s.new.UID)
		if err := r.setScaleUpDisabled(ctx, ms, want); err != nil {
			return err
		}
	}
	return nil
}

// clearScaleUpDisabled takes scale-up-disabled off every set of a
// deployment that does not roll in place (any more).
func (r *Reconciler) clearScaleUpDisabled(ctx context.Context, s *scope) error {
	for _, ms := range s.sets {
		if err := r.setScaleUpDisabled(ctx, ms, false); err != nil {
			return err
		}
	}
	return nil
}

func (r *Reconciler) setScaleUpDisabled(ctx context.Context, ms *v1alpha1.MachineSet, want bool) error {
	has := ms.Labels[v1alpha1.LabelKeyMachineSetScaleUpDisabled] == "true"
	if has == want {
		return nil
	}
	updated := ms.DeepCopy()
	if want {
		if updated.Labels == nil {
			updated.Labels = map[string]string{}
		}
		updated.Labels[v1alpha1.LabelKeyMachineSetScaleUpDisabled] = "true"
	} else {
		delete(updated.Labels, v1alpha1.LabelKeyMachineSetScaleUpDisabled)
	}
	if err := r.Client.Patch(ctx, updated, client.MergeFrom(ms)); err != nil {
		return fmt.Errorf("labelling machine set %s: %w", ms.Name, err)
	}
	*ms = *updated
	return nil
}

// loadMachines returns the machines of sets in Auto's order
// (inSelectionOrder), with their nodes.
func (r *Reconciler) loadMachines(ctx context.Context, s *scope, sets []*v1alpha1.MachineSet) ([]machineNode, error) {
	out := inSelectionOrder(s, sets)
	for i := range out {
		name := out[i].m.Labels[v1alpha1.NodeLabelKey]
		if name == "" {
			continue
		}
		if n := s.writtenNode(name); n != nil {
			// Written by this sync: newer than the cache's.
			out[i].node = n.DeepCopy()
			continue
		}
		n := &corev1.Node{}
		err := r.Target.Get(ctx, client.ObjectKey{Name: name}, n)
		switch {
		case err == nil:
			out[i].node = n
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("reading node %s: %w", name, err)
		}
	}
	return out, nil
}

// inSelectionOrder returns the machines of sets that are not being
// deleted, without their nodes, in the order in which Auto selects: sets
// oldest first, within a set by node name, then machine name. The
// selection (loadMachines) and the first wave's deferral
// (deferredCandidates) both follow it, so the nodes marked before the
// first selection are the ones it takes.
func inSelectionOrder(s *scope, sets []*v1alpha1.MachineSet) []machineNode {
	sets = slices.Clone(sets)
	sortByCreation(sets)
	var out []machineNode
	for _, ms := range sets {
		start := len(out)
		for _, m := range s.machines[ms.UID] {
			if m.DeletionTimestamp != nil || m.Status.CurrentStatus.Phase == v1alpha1.MachineTerminating {
				continue
			}
			out = append(out, machineNode{ms: ms, m: m})
		}
		slices.SortFunc(out[start:], func(a, b machineNode) int {
			if c := strings.Compare(a.m.Labels[v1alpha1.NodeLabelKey], b.m.Labels[v1alpha1.NodeLabelKey]); c != 0 {
				return c
			}
			return strings.Compare(a.m.Name, b.m.Name)
		})
	}
	return out
}

// candidateMark returns the change that makes the node of a machine of an
// old set a candidate of the rollout to target, for the machines
// loadMachines takes (not being deleted); nil for the others.
func candidateMark(s *scope, target string) func(*v1alpha1.Machine) *nodeChange {
	old := map[types.UID]bool{}
	for _, ms := range s.old {
		old[ms.UID] = true
	}
	mark := &nodeChange{
		done:  func(n *corev1.Node) bool { return inplace.CandidateMarked(n, target) },
		apply: func(n *corev1.Node) bool { return inplace.MarkCandidate(n, target) },
	}
	return func(m *v1alpha1.Machine) *nodeChange {
		ref := metav1.GetControllerOfNoCopy(m)
		if ref == nil || !old[ref.UID] || m.DeletionTimestamp != nil || m.Status.CurrentStatus.Phase == v1alpha1.MachineTerminating {
			return nil
		}
		return mark
	}
}

// markCandidates makes every node of an old set a candidate of the rollout
// to the new set: label, target annotation and PreferNoSchedule taint; the
// deferred ones later (markDeferred).
func (r *Reconciler) markCandidates(ctx context.Context, s *scope, old []machineNode, target string, deferred map[string]bool) error {
	for _, om := range old {
		if om.node == nil || deferred[om.node.Name] {
			continue
		}
		if err := r.changeNode(ctx, s, om.node, func(n *corev1.Node) bool { return inplace.MarkCandidate(n, target) }); err != nil {
			return err
		}
	}
	return nil
}

// changeNode applies change to a copy of node and writes the difference
// with a minimal patch (inplace.Patch). A conflict (the node changed
// meanwhile) is retried on the next sync, soon. node is updated in place.
func (r *Reconciler) changeNode(ctx context.Context, s *scope, node *corev1.Node, change func(*corev1.Node) bool) error {
	updated := node.DeepCopy()
	if !change(updated) {
		return nil
	}
	err := inplace.Patch(ctx, r.Target, node, updated)
	switch {
	case err == nil:
		*node = *updated
		s.noteNodeWritten(updated.DeepCopy())
		return nil
	case apierrors.IsConflict(err):
		s.noteNodeConflict()
		return nil
	case apierrors.IsNotFound(err):
		return nil
	default:
		return err
	}
}

// staleMachines returns the machines of the new set whose node is not on
// its target: the agent last applied another one (inplace.CurrentAnnotation
// names another set), or the node is still being told to apply another
// one. A rollback, or a template change back to an older revision, makes
// such a set new again while some of its nodes were updated, or were being
// updated, to the template it replaced. They are updated back in place
// like old machines, without a move. An agent that does not write
// CurrentAnnotation (MCM's) leaves nothing to compare: its nodes are taken
// to be on their set's target.
func staleMachines(current []machineNode, target string) []machineNode {
	var out []machineNode
	for _, mn := range current {
		if mn.node == nil {
			continue
		}
		applied, hasApplied := mn.node.Annotations[inplace.CurrentAnnotation]
		desired, hasDesired := mn.node.Annotations[inplace.DesiredAnnotation]
		updating := mn.m.Status.CurrentStatus.Phase == v1alpha1.MachineInPlaceUpdating
		if (hasApplied && applied != target) || (updating && hasDesired && desired != target) {
			out = append(out, mn)
		}
	}
	return out
}

// syncCurrentMachines keeps the nodes of the new set's machines in line
// with it. A stale node (staleMachines) is a candidate of the rollout to
// the new set, selected within the budget like an old one (a result it
// reported for another target is dropped: inplace.MarkCandidate). A node
// whose update to the new set is under way, or failed (replaceFailedInPlace
// takes it), is left alone. Any other node loses the rollout's labels,
// annotations and taint and is uncordoned: it was moved here, or its
// update to a set that is no longer new was cancelled before the go
// signal. It returns the Machines whose transfer marker may come off (the
// set's replicas include them): removeTransferMarkers takes it off at the
// end of the sync, after the selection, which does not wait for them.
func (r *Reconciler) syncCurrentMachines(ctx context.Context, s *scope, current, stale []machineNode) ([]*v1alpha1.Machine, error) {
	newMS := s.new
	var marked []*v1alpha1.Machine
	isStale := map[*v1alpha1.Machine]bool{}
	for _, mn := range stale {
		isStale[mn.m] = true
	}
	for _, mn := range current {
		switch n, phase := mn.node, mn.m.Status.CurrentStatus.Phase; {
		case n == nil:
		case isStale[mn.m]:
			if err := r.changeNode(ctx, s, n, func(n *corev1.Node) bool { return inplace.MarkCandidate(n, newMS.Name) }); err != nil {
				return nil, err
			}
		case phase == v1alpha1.MachineInPlaceUpdating, phase == v1alpha1.MachineInPlaceUpdateFailed:
		case inplace.HasRolloutMarks(n):
			if err := r.changeNode(ctx, s, n, func(n *corev1.Node) bool {
				// Only a selected node was drained (cordoned) for the
				// update; a cordon on a mere candidate is someone else's.
				drained := inplace.IsSelected(n) || inplace.Result(n) != ""
				changed := inplace.Clear(n)
				if drained {
					changed = inplace.Uncordon(n) || changed
				}
				return changed
			}); err != nil {
				return nil, err
			}
		}
		if mn.m.Labels[v1alpha1.LabelKeyNodeUpdateResult] != "" && newMS.Spec.Replicas >= int32(len(current)) {
			marked = append(marked, mn.m)
		}
	}
	return marked, nil
}

// removeTransferMarkers takes the transfer marker off the machines
// syncCurrentMachines returned, a wave's together (inParallel).
func (r *Reconciler) removeTransferMarkers(ctx context.Context, marked []*v1alpha1.Machine) error {
	return inParallel(len(marked), func(i int) error {
		m := marked[i]
		updated := m.DeepCopy()
		delete(updated.Labels, v1alpha1.LabelKeyNodeUpdateResult)
		if err := r.Client.Patch(ctx, updated, client.MergeFrom(m)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("removing the transfer marker of machine %s: %w", m.Name, err)
		}
		return nil
	})
}

// stripOldMarkers takes the transfer marker off machines of old sets: a
// machine moved into a set that a newer template made old before the
// marker came off; it protects nothing there.
func (r *Reconciler) stripOldMarkers(ctx context.Context, old []machineNode) error {
	for _, om := range old {
		if om.m.Labels[v1alpha1.LabelKeyNodeUpdateResult] == "" {
			continue
		}
		updated := om.m.DeepCopy()
		delete(updated.Labels, v1alpha1.LabelKeyNodeUpdateResult)
		if err := r.Client.Patch(ctx, updated, client.MergeFrom(om.m)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("removing the transfer marker of machine %s: %w", om.m.Name, err)
		}
	}
	return nil
}

// sizeInPlaceSets brings the sets' replicas in line with their machines
// and the engine's sizing (planInPlaceSizes).
func (r *Reconciler) sizeInPlaceSets(ctx context.Context, s *scope, old []machineNode) error {
	return r.applySteps(ctx, s, planInPlaceSizes(inPlaceSnapshotOf(s, old, nil)).Steps, r.resizeMachineSet)
}

// inPlaceSnapshotOf takes what the in-place sizing is planned from: the
// sets' replicas, the old sets' machines as loaded (not being deleted) and
// how many of them carry the transfer marker, the new set's machines that
// are not being deleted, and the machines moved out of each old set.
func inPlaceSnapshotOf(s *scope, old []machineNode, moved map[*v1alpha1.MachineSet]int32) inPlaceSnapshot {
	have, marked := map[*v1alpha1.MachineSet]int32{}, map[*v1alpha1.MachineSet]int32{}
	for _, om := range old {
		have[om.ms]++
		if om.m.Labels[v1alpha1.LabelKeyNodeUpdateResult] != "" {
			marked[om.ms]++
		}
	}
	snap := inPlaceSnapshot{Replicas: s.d.Spec.Replicas, MaxSurge: maxSurge(s.d)}
	for _, ms := range s.old {
		snap.Old = append(snap.Old, inPlaceSetSnapshot{Name: ms.Name, Replicas: ms.Spec.Replicas, Machines: have[ms], Marked: marked[ms], Moved: moved[ms]})
	}
	snap.New = inPlaceSetSnapshot{Name: s.new.Name, Replicas: s.new.Spec.Replicas}
	for _, m := range s.machines[s.new.UID] {
		if m.DeletionTimestamp == nil {
			snap.New.Machines++
		}
	}
	return snap
}

// moveUpdatedMachines moves every old machine whose node was updated
// (condition UpdateSuccessful, label update-result=successful, phase past
// InPlaceUpdating) to the new set: one merge patch of the Machine (the new
// set as controller, its selector labels instead of the old set's, the
// transfer marker; the name is kept), the node cleared and uncordoned, then the old
// sets shrink and the new one grows by the number moved.
func (r *Reconciler) moveUpdatedMachines(ctx context.Context, s *scope, old []machineNode) (int32, error) {
	newMS := s.new
	var todo []machineNode
	for _, om := range old {
		// The node must have been updated to this rollout's target: a
		// result for an earlier target (a second template change) is
		// dropped when the node is marked (inplace.MarkCandidate), and a
		// node whose marking failed waits for the next sync.
		if om.node == nil || om.node.Annotations[v1alpha1.AnnotationKeyNodeDesired] != newMS.Name ||
			inplace.Reason(om.node) != v1alpha1.UpdateSuccessful ||
			inplace.Result(om.node) != v1alpha1.LabelValueNodeUpdateSuccessful || inplace.StaleResult(om.node, newMS.Name) ||
			om.m.Status.CurrentStatus.Phase == v1alpha1.MachineInPlaceUpdating {
			continue
		}
		todo = append(todo, om)
	}
	// The moves of a wave go out together (inParallel); the sets are
	// scaled once for all of them.
	var (
		mu       sync.Mutex
		fromSets = map[*v1alpha1.MachineSet]int32{}
		moved    int32
		names    []string
	)
	err := inParallel(len(todo), func(i int) error {
		om := todo[i]
		if err := r.moveMachine(ctx, om, newMS); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				s.noteNodeConflict()
				return nil
			}
			return err
		}
		r.moved.add(om.m.UID, newMS.UID, s.now)
		mu.Lock()
		fromSets[om.ms]++
		moved++
		names = append(names, om.m.Name)
		mu.Unlock()
		// The node is done with the rollout: its marks come off with the
		// uncordon, in one write, and its machine turns Running on this
		// change (syncCurrentMachines would otherwise clear it on the next
		// sync, one more write and one more round before its slot of the
		// budget is free). Only a machine whose controller has taken the
		// agent's answer (phase InPlaceUpdateSuccessful) is cleared here;
		// one that has not yet (a manager restarted between the go signal
		// and the phase) keeps its marks until syncCurrentMachines sees it
		// settled, as before.
		if om.m.Status.CurrentStatus.Phase != v1alpha1.MachineInPlaceUpdateSuccessful {
			return r.changeNode(ctx, s, om.node, inplace.Uncordon)
		}
		return r.changeNode(ctx, s, om.node, clearMoved)
	})
	if moved > 0 {
		slices.Sort(names)
	}
	if err != nil && moved == 0 {
		return 0, err
	}
	if moved == 0 {
		return 0, nil
	}
	if err := r.applySteps(ctx, s, planInPlaceMoves(inPlaceSnapshotOf(s, old, fromSets)).Steps, r.resizeForMove); err != nil {
		return moved, err
	}
	// One event for the moves and the scaling they bring (the sets were
	// scaled without events of their own: resizeForMove).
	r.Recorder.Eventf(s.d, newMS, corev1.EventTypeNormal, reasonInPlaceMoved, "UpdateInPlace", "Moved %d machines updated in place %s to machine set %s, now at %d replicas: %s",
		moved, movedFrom(fromSets), newMS.Name, newMS.Spec.Replicas, strings.Join(names, ", "))
	return moved, err
}

// movedFrom names the old sets machines were moved out of, with the
// replicas each was scaled to: "from set a, now at 3 replicas".
func movedFrom(fromSets map[*v1alpha1.MachineSet]int32) string {
	parts := make([]string, 0, len(fromSets))
	for ms := range fromSets {
		parts = append(parts, fmt.Sprintf("%s, now at %d replicas", ms.Name, ms.Spec.Replicas))
	}
	slices.Sort(parts)
	return "from machine set " + strings.Join(parts, "; from machine set ")
}

// clearMoved takes the rollout's marks off the node of a machine just moved
// to the new set and uncordons it (it was drained for the update).
func clearMoved(n *corev1.Node) bool {
	changed := inplace.Clear(n)
	return inplace.Uncordon(n) || changed
}

// moveMachine writes the move of one machine to the new set in one merge
// patch with the resource version (a machine changed meanwhile is moved on
// a later sync).
func (r *Reconciler) moveMachine(ctx context.Context, om machineNode, newMS *v1alpha1.MachineSet) error {
	updated := om.m.DeepCopy()
	if updated.Labels == nil {
		updated.Labels = map[string]string{}
	}
	if sel := om.ms.Spec.Selector; sel != nil {
		for k := range sel.MatchLabels {
			delete(updated.Labels, k)
		}
	}
	if sel := newMS.Spec.Selector; sel != nil {
		for k, v := range sel.MatchLabels {
			updated.Labels[k] = v
		}
	}
	updated.Labels[v1alpha1.LabelKeyNodeUpdateResult] = v1alpha1.LabelValueNodeUpdateSuccessful
	var refs []metav1.OwnerReference
	for _, ref := range updated.OwnerReferences {
		if ref.Controller == nil || !*ref.Controller {
			refs = append(refs, ref)
		}
	}
	refs = append(refs, *metav1.NewControllerRef(newMS, v1alpha1.GroupVersion.WithKind("MachineSet")))
	updated.OwnerReferences = refs
	return r.Client.Patch(ctx, updated, client.MergeFromWithOptions(om.m, client.MergeFromWithOptimisticLock{}))
}

// replaceFailedInPlace handles machines whose in-place update failed
// (phase InPlaceUpdateFailed: the node's agent reported failed, or did not
// answer within the in-place timeout). In Auto each is deleted at once,
// through the normal deletion flow: its node is already drained, its VM
// goes, its old set shrinks on the next sync and the new set grows by one,
// so a fresh machine of the new template takes its place. An agent that
// reported failed does not try again on its own (docs/in-place-updates.md),
// so waiting would only keep the node cordoned. In Manual it is left for
// the user, who chose the node. Either way the Progressing condition names
// it (afterStatus).
func (r *Reconciler) replaceFailedInPlace(ctx context.Context, s *scope, machines []machineNode) error {
	st := s.inPlace
	for _, om := range machines {
		m := om.m
		if m.Status.CurrentStatus.Phase != v1alpha1.MachineInPlaceUpdateFailed {
			continue
		}
		why := m.Status.LastOperation.Description
		if !st.auto {
			st.failures = append(st.failures, fmt.Sprintf("machine %s failed its in-place update (%s); with orchestrationType Manual it is left for the user: its node stays cordoned until its agent reports success or the machine is deleted (a fresh machine of the new template takes its place).", m.Name, why))
			continue
		}
		err := r.Client.Delete(ctx, m, client.Preconditions{UID: &m.UID})
		if client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting machine %s whose in-place update failed: %w", m.Name, err)
		}
		msg := fmt.Sprintf("machine %s failed its in-place update (%s) and is replaced by a fresh machine of the new template.", m.Name, why)
		st.failures = append(st.failures, msg)
		r.Recorder.Eventf(s.d, m, corev1.EventTypeWarning, reasonInPlaceReplacing, "UpdateInPlace", "Replacing %s", msg)
		s.log.Info("Replacing a machine whose in-place update failed", "machine", m.Name, "reason", why)
	}
	return nil
}

// selectForUpdate labels as many candidate nodes selected-for-update as
// the budget allows (inplace.Budget), in the order of loadOldMachines.
// Which nodes may be selected, and how many, is planned (planWave,
// plan_wave.go): only nodes of Running (or Available) machines, as a
// machine that is unhealthy, or already under way, is not drained for an
// update.
func (r *Reconciler) selectForUpdate(ctx context.Context, s *scope, candidates []machineNode, stale int32) error {
	// A disruption budget of reason InPlace caps the nodes updating at once.
	wave := planWaveWithBudget(waveSnapshotOf(s, candidates, stale), func(underway int32) budgetRoom {
		room, limited := r.room(s, v1alpha1.DisruptionReasonInPlace, underway)
		return budgetRoom{Limited: limited, Room: room}
	})
	b, n := wave.Counts, wave.Select
	selectable := make([]machineNode, 0, len(wave.selectable))
	for _, i := range wave.selectable {
		selectable = append(selectable, candidates[i])
	}
	// A node with a pre-update hook (on it or its machine), or whose pods (or
	// itself) ask not to be disrupted, is passed over, its slot going to the
	// next candidate; the rollout looks again in disruption.Recheck, as pods
	// are not watched (a machine's change wakes it at once).
	//
	// Each hold is a live list of the node's pods: the first n are looked
	// up together (inParallel), the ones after them only if a node is held.
	holds := make([]string, min(int(max(n, 0)), len(selectable)))
	if err := inParallel(len(holds), func(i int) error {
		why, err := disruption.UpdateHold(ctx, r.Pods, selectable[i].node, selectable[i].m)
		holds[i] = why
		return err
	}); err != nil {
		return err
	}
	looked := map[*corev1.Node]int{}
	for i := range holds {
		looked[selectable[i].node] = i
	}
	picked, held, err := disruption.Pick(selectable, func(om machineNode) (string, error) {
		if i, ok := looked[om.node]; ok {
			return holds[i], nil
		}
		return disruption.UpdateHold(ctx, r.Pods, om.node, om.m)
	}, n)
	if err != nil {
		return err
	}
	if len(held) > 0 {
		s.inPlace.held = held
		s.log.Info("Nodes wait: hooks or pods hold them", "held", held)
		r.Recorder.Eventf(s.d, nil, corev1.EventTypeNormal, ReasonDisruptionHeld, "UpdateInPlace", "Not selected now: %s", strings.Join(held, "; "))
	}
	// The wave's nodes are selected together (inParallel).
	if err := inParallel(len(picked), func(i int) error {
		return r.changeNode(ctx, s, picked[i].node, inplace.MarkSelected)
	}); err != nil {
		return err
	}
	s.inPlace.counts.Selected += int32(len(picked))
	if len(picked) > 0 {
		s.log.Info("Selected nodes for an in-place update", "count", len(picked), "budget", fmt.Sprintf("%+v", b))
	}
	return nil
}

// isAvailablePhase reports the phases that count as available in an
// in-place rollout: Running, and Available (no target cluster).
func isAvailablePhase(p v1alpha1.MachinePhase) bool {
	return p == v1alpha1.MachineRunning || p == v1alpha1.MachineAvailable
}
