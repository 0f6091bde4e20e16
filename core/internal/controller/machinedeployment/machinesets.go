package machinedeployment

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/phase"
	"github.com/machina-io/machina/core/internal/controller/setup"
)

// Annotations of machine sets that the API package does not name: they are
// Kubernetes' Deployment's and kubectl's.
const (
	// AnnotationRevisionHistory lists the earlier revisions a machine set served
	// (when a rollback made an old template current again).
	AnnotationRevisionHistory = "deployment.kubernetes.io/revision-history"
	// AnnotationLastApplied is kubectl's; it is not copied to machine sets.
	AnnotationLastApplied = "kubectl.kubernetes.io/last-applied-configuration"
)

// annotationsNotCopied are the deployment annotations a machine set does not
// inherit: they describe the deployment itself or carry protocol state.
var annotationsNotCopied = map[string]bool{
	AnnotationLastApplied:                            true,
	v1alpha1.RevisionAnnotation:                      true,
	AnnotationRevisionHistory:                        true,
	v1alpha1.DesiredReplicasAnnotation:               true,
	v1alpha1.MaxReplicasAnnotation:                   true,
	v1alpha1.TriggerDeletionByMCMAnnotation:          true,
	v1alpha1.LastReplicaChangeByScalerTimeAnnotation: true,
	"deprecated.deployment.rollback.to":              true,
	AnnotationRolloutAfter:                           true,
}

// maxRevisionHistoryChars bounds the revision-history annotation, as
// Kubernetes does (about a hundred revisions).
const maxRevisionHistoryChars = 2000

// loadSets is the phase that gathers the deployment's machine sets into the
// scope: it claims them (claimMachineSets), splits them into the new one and
// the old ones, and groups the machines by set. The machines are the cache's
// own objects, not copies (copying every machine on every sync was most of
// the controller's CPU in a scale-up): they are only read, and must be
// deep-copied before a change. A sync that cannot read its sets writes
// nothing.
func (r *Reconciler) loadSets(ctx context.Context, s *scope) (phase.Result, error) {
	if err := r.loadSetsAndMachines(ctx, s); err != nil {
		s.skipStatus = true
		return phase.Result{}, err
	}
	// A future spec.rolloutAfter starts a rollout when it passes, with no
	// event of its own to wake the deployment.
	return phase.Result{RequeueAfter: untilRolloutAfter(s.d, s.now)}, nil
}

func (r *Reconciler) loadSetsAndMachines(ctx context.Context, s *scope) error {
	sets, err := r.claimMachineSets(ctx, s.d, s.selector)
	if err != nil {
		return err
	}
	s.sets = sets
	s.new, s.old = splitNewOld(s.d, sets, s.now)
	s.machines = map[types.UID][]*v1alpha1.Machine{}
	for _, ms := range sets {
		machines, err := r.Clients.Machines().ByField(ctx, s.d.Namespace, setup.MachineControllerIndex, string(ms.UID))
		if err != nil {
			return fmt.Errorf("listing machines of %s: %w", ms.Name, err)
		}
		s.machines[ms.UID] = machines
	}
	return nil
}

// claimMachineSets returns the machine sets the deployment controls, after
// adopting orphan sets that match its selector and releasing controlled sets
// that no longer match (the ReplicaSet-to-Deployment rules).
func (r *Reconciler) claimMachineSets(ctx context.Context, d *v1alpha1.MachineDeployment, selector labels.Selector) ([]*v1alpha1.MachineSet, error) {
	all := &v1alpha1.MachineSetList{}
	if err := r.Client.List(ctx, all, client.InNamespace(d.Namespace)); err != nil {
		return nil, fmt.Errorf("listing machine sets: %w", err)
	}
	var (
		owned    []*v1alpha1.MachineSet
		canAdopt *bool
	)
	for i := range all.Items {
		ms := &all.Items[i]
		ref := metav1.GetControllerOf(ms)
		matches := selector.Matches(labels.Set(ms.Labels))
		switch {
		case ref != nil && ref.UID == d.UID:
			if matches || d.DeletionTimestamp != nil {
				owned = append(owned, ms)
				continue
			}
			if err := r.patchOwner(ctx, ms, func(o *v1alpha1.MachineSet) error {
				return controllerutil.RemoveControllerReference(d, o, r.Client.Scheme())
			}); err != nil {
				return nil, fmt.Errorf("releasing machine set %s: %w", ms.Name, err)
			}
		case ref != nil, !matches, ms.DeletionTimestamp != nil, d.DeletionTimestamp != nil:
			// Another controller's set, or an orphan this deployment does not want.
		default:
			if canAdopt == nil {
				ok := r.freshDeploymentStillLive(ctx, d)
				canAdopt = &ok
			}
			if !*canAdopt {
				continue
			}
			err := r.patchOwner(ctx, ms, func(o *v1alpha1.MachineSet) error {
				return controllerutil.SetControllerReference(d, o, r.Client.Scheme())
			})
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("adopting machine set %s: %w", ms.Name, err)
			}
			ctrl.LoggerFrom(ctx).Info("Adopted orphan machine set", "machineSet", ms.Name)
			owned = append(owned, ms)
		}
	}
	return owned, nil
}

// patchOwner changes the owner references of a machine set with an
// optimistic lock; ms is updated in place.
func (r *Reconciler) patchOwner(ctx context.Context, ms *v1alpha1.MachineSet, change func(*v1alpha1.MachineSet) error) error {
	orig := ms.DeepCopy()
	if err := change(ms); err != nil {
		return err
	}
	return r.Client.Patch(ctx, ms, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
}

// freshDeploymentStillLive re-reads the deployment from the API server before
// an adoption: a deployment being deleted, or replaced by a new object of the
// same name, must not take machine sets.
func (r *Reconciler) freshDeploymentStillLive(ctx context.Context, d *v1alpha1.MachineDeployment) bool {
	fresh := &v1alpha1.MachineDeployment{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(d), fresh); err != nil {
		return false
	}
	return fresh.UID == d.UID && fresh.DeletionTimestamp == nil
}

// sortByCreation sorts machine sets oldest first, by name on ties.
func sortByCreation(sets []*v1alpha1.MachineSet) {
	sort.SliceStable(sets, func(i, j int) bool { return olderThan(sets[i], sets[j]) })
}

func olderThan(a, b *v1alpha1.MachineSet) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

// splitNewOld returns the machine set of the deployment's current template
// (nil if there is none yet; isCurrentSet says which are, spec.rolloutAfter
// included) and all others. If several sets are current, the oldest is the
// new one (kubernetes#40415).
func splitNewOld(d *v1alpha1.MachineDeployment, sets []*v1alpha1.MachineSet, now time.Time) (*v1alpha1.MachineSet, []*v1alpha1.MachineSet) {
	sorted := append([]*v1alpha1.MachineSet(nil), sets...)
	sortByCreation(sorted)
	var newMS *v1alpha1.MachineSet
	var old []*v1alpha1.MachineSet
	for _, ms := range sorted {
		if newMS == nil && isCurrentSet(d, ms, now) {
			newMS = ms
			continue
		}
		old = append(old, ms)
	}
	return newMS, old
}

// active returns the sets that should have machines.
func active(sets []*v1alpha1.MachineSet) []*v1alpha1.MachineSet {
	var out []*v1alpha1.MachineSet
	for _, ms := range sets {
		if ms != nil && ms.Spec.Replicas > 0 {
			out = append(out, ms)
		}
	}
	return out
}

// revisionOf returns an object's revision annotation, 0 when absent or invalid.
func revisionOf(obj metav1.Object) int64 {
	v, err := strconv.ParseInt(obj.GetAnnotations()[v1alpha1.RevisionAnnotation], 10, 64)
	if err != nil {
		return 0
	}
	return v
}

func maxRevision(sets []*v1alpha1.MachineSet) int64 {
	var m int64
	for _, ms := range sets {
		m = max(m, revisionOf(ms))
	}
	return m
}

// setNewMachineSetAnnotations brings the annotations of the new machine set
// up to date: the deployment's own annotations (except the ones that describe
// the deployment), the revision (raised to newRevision if lower, recording the
// old one in the history: a rollback made this template current again) and,
// for a set about to be created, the replica annotations. It reports whether
// anything changed.
func setNewMachineSetAnnotations(d *v1alpha1.MachineDeployment, ms *v1alpha1.MachineSet, newRevision int64, exists bool) bool {
	changed := false
	if ms.Annotations == nil {
		ms.Annotations = map[string]string{}
	}
	for k, v := range d.Annotations {
		if annotationsNotCopied[k] {
			continue
		}
		if cur, ok := ms.Annotations[k]; !ok || cur != v {
			ms.Annotations[k] = v
			changed = true
		}
	}
	oldRevision, had := ms.Annotations[v1alpha1.RevisionAnnotation]
	oldRev, err := strconv.ParseInt(oldRevision, 10, 64)
	if err != nil && oldRevision != "" {
		// A revision we cannot read is left alone rather than overwritten.
		return changed
	}
	if oldRev < newRevision {
		ms.Annotations[v1alpha1.RevisionAnnotation] = strconv.FormatInt(newRevision, 10)
		changed = true
		if had && oldRevision != "" {
			ms.Annotations[AnnotationRevisionHistory] = appendRevisionHistory(ms.Annotations[AnnotationRevisionHistory], oldRevision)
		}
	}
	if !exists && setReplicaAnnotations(ms, d.Spec.Replicas, d.Spec.Replicas+maxSurge(d)) {
		changed = true
	}
	return changed
}

// appendRevisionHistory appends rev to a comma-separated history, dropping
// the oldest entries to stay within maxRevisionHistoryChars.
func appendRevisionHistory(history, rev string) string {
	var revs []string
	if history != "" {
		revs = strings.Split(history, ",")
	}
	revs = append(revs, rev)
	for len(revs) > 1 && len(strings.Join(revs, ",")) > maxRevisionHistoryChars {
		revs = revs[1:]
	}
	return strings.Join(revs, ",")
}

// setReplicaAnnotations records the deployment's replicas and
// replicas+maxSurge on a machine set; it reports whether they changed.
func setReplicaAnnotations(ms *v1alpha1.MachineSet, desired, maxReplicas int32) bool {
	if ms.Annotations == nil {
		ms.Annotations = map[string]string{}
	}
	changed := false
	for k, v := range map[string]string{
		v1alpha1.DesiredReplicasAnnotation: strconv.Itoa(int(desired)),
		v1alpha1.MaxReplicasAnnotation:     strconv.Itoa(int(maxReplicas)),
	} {
		if ms.Annotations[k] != v {
			ms.Annotations[k] = v
			changed = true
		}
	}
	return changed
}

// annotationInt reads a non-negative integer annotation.
func annotationInt(ms *v1alpha1.MachineSet, key string) (int32, bool) {
	v, ok := ms.Annotations[key]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(v, 10, 31)
	if err != nil {
		return 0, false
	}
	return int32(n), true
}

// applyInPlaceFields copies the fields MCM applies without a rollout (node
// template, machine configuration, class kind), minReadySeconds and
// autoPreserveFailedMachineMax from the deployment to its new machine set; the MachineSet controller passes them on
// to the machines. It reports whether anything changed.
func applyInPlaceFields(d *v1alpha1.MachineDeployment, ms *v1alpha1.MachineSet) bool {
	want, have := &d.Spec.Template.Spec, &ms.Spec.Template.Spec
	changed := false
	if !apiequality.Semantic.DeepEqual(want.NodeTemplateSpec, have.NodeTemplateSpec) {
		have.NodeTemplateSpec = *want.NodeTemplateSpec.DeepCopy()
		changed = true
	}
	if !apiequality.Semantic.DeepEqual(want.MachineConfiguration, have.MachineConfiguration) {
		have.MachineConfiguration = want.MachineConfiguration.DeepCopy()
		changed = true
	}
	if want.Class.Kind != have.Class.Kind {
		have.Class.Kind = want.Class.Kind
		changed = true
	}
	if ms.Spec.MinReadySeconds != d.Spec.MinReadySeconds {
		ms.Spec.MinReadySeconds = d.Spec.MinReadySeconds
		changed = true
	}
	// MCM hands the deployment's autoPreserveFailedMachineMax to its
	// current set (old sets keep theirs: they are scaled away).
	if !apiequality.Semantic.DeepEqual(ms.Spec.AutoPreserveFailedMachineMax, d.Spec.AutoPreserveFailedMachineMax) {
		ms.Spec.AutoPreserveFailedMachineMax = ptrCopy(d.Spec.AutoPreserveFailedMachineMax)
		changed = true
	}
	return changed
}

// getNewMachineSet returns the machine set of the deployment's current
// template, bringing its annotations and in-place fields up to date and
// recording its revision on the deployment. Without such a set it creates one
// when create is true, and returns nil otherwise.
func (r *Reconciler) getNewMachineSet(ctx context.Context, s *scope, create bool) (*v1alpha1.MachineSet, error) {
	d := s.d
	newRevision := maxRevision(s.old) + 1

	if ms := s.new; ms != nil {
		updated := ms.DeepCopy()
		changed := setNewMachineSetAnnotations(d, updated, newRevision, true)
		changed = applyInPlaceFields(d, updated) || changed
		if changed {
			if err := r.Client.Patch(ctx, updated, client.MergeFromWithOptions(ms, client.MergeFromWithOptimisticLock{})); err != nil {
				return nil, fmt.Errorf("updating machine set %s: %w", ms.Name, err)
			}
			*ms = *updated
		}
		s.setRevision(ms.Annotations[v1alpha1.RevisionAnnotation])
		if getCondition(&d.Status, v1alpha1.MachineDeploymentProgressing) == nil {
			setCondition(&d.Status, newCondition(v1alpha1.MachineDeploymentProgressing, v1alpha1.ConditionTrue,
				ReasonFoundNewMachineSet, fmt.Sprintf("Found new machine set %q", ms.Name), s.now))
		}
		return ms, nil
	}
	if !create {
		return nil, nil
	}

	ms := r.buildNewMachineSet(d, s.now)
	ms.Spec.Replicas = newMachineSetReplicas(d, append(append([]*v1alpha1.MachineSet(nil), s.old...), ms), ms)
	setNewMachineSetAnnotations(d, ms, newRevision, false)
	err := r.Client.Create(ctx, ms)
	alreadyExisted := false
	switch {
	case apierrors.IsAlreadyExists(err):
		// The cache may lag behind a set this controller created a moment ago;
		// or another template hashed to the same name.
		existing := &v1alpha1.MachineSet{}
		if gerr := r.APIReader.Get(ctx, client.ObjectKeyFromObject(ms), existing); gerr != nil {
			return nil, fmt.Errorf("reading existing machine set %s: %w", ms.Name, gerr)
		}
		if ref := metav1.GetControllerOf(existing); ref != nil && ref.UID == d.UID && isCurrentSet(d, existing, s.now) {
			ms, alreadyExisted = existing, true
			break
		}
		count := int32(0)
		if d.Status.CollisionCount != nil {
			count = *d.Status.CollisionCount
		}
		count++
		d.Status.CollisionCount = &count
		return nil, fmt.Errorf("machine set name %s collides with another template; retrying with collision count %d", ms.Name, count)
	case err != nil:
		msg := fmt.Sprintf("Failed to create new machine set %q: %v", ms.Name, err)
		setCondition(&d.Status, newCondition(v1alpha1.MachineDeploymentProgressing, v1alpha1.ConditionFalse, ReasonFailedMachineSetCreate, msg, s.now))
		r.Recorder.Eventf(d, nil, corev1.EventTypeWarning, ReasonFailedMachineSetCreate, "Create", "%s", msg)
		return nil, fmt.Errorf("creating machine set %s: %w", ms.Name, err)
	}
	s.new = ms
	s.sets = append(s.sets, ms)
	if alreadyExisted {
		s.setRevision(ms.Annotations[v1alpha1.RevisionAnnotation])
		return ms, nil
	}
	ctrl.LoggerFrom(ctx).Info("Created new machine set", "machineSet", ms.Name, "replicas", ms.Spec.Replicas)
	if ms.Spec.Replicas > 0 {
		r.Recorder.Eventf(d, ms, corev1.EventTypeNormal, "ScalingMachineSet", "ScaleUp", "Scaled up machine set %s from 0 to %d", ms.Name, ms.Spec.Replicas)
	}
	s.setRevision(strconv.FormatInt(newRevision, 10))
	setCondition(&d.Status, newCondition(v1alpha1.MachineDeploymentProgressing, v1alpha1.ConditionTrue,
		ReasonNewMachineSetCreated, fmt.Sprintf("Created new machine set %q", ms.Name), s.now))
	return ms, nil
}

// buildNewMachineSet returns the machine set for the deployment's current
// template: named and labelled by the template hash, which also narrows its
// selector so that sibling sets never select each other's machines. A set
// made for a passed spec.rolloutAfter hashes that time too and records it.
func (r *Reconciler) buildNewMachineSet(d *v1alpha1.MachineDeployment, now time.Time) *v1alpha1.MachineSet {
	rolloutAfter := passedRolloutAfter(d, now)
	hash := templateHash(&d.Spec.Template, d.Status.CollisionCount, rolloutAfter)
	tmpl := d.Spec.Template.DeepCopy()
	tmpl.Labels = maps.Clone(tmpl.Labels)
	if tmpl.Labels == nil {
		tmpl.Labels = map[string]string{}
	}
	tmpl.Labels[v1alpha1.DefaultMachineDeploymentUniqueLabelKey] = hash
	selector := d.Spec.Selector.DeepCopy()
	if selector.MatchLabels == nil {
		selector.MatchLabels = map[string]string{}
	}
	selector.MatchLabels[v1alpha1.DefaultMachineDeploymentUniqueLabelKey] = hash
	ms := &v1alpha1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:      machineSetName(d.Name, hash),
			Namespace: d.Namespace,
			Labels:    maps.Clone(tmpl.Labels),
		},
		Spec: v1alpha1.MachineSetSpec{
			MinReadySeconds:              d.Spec.MinReadySeconds,
			AutoPreserveFailedMachineMax: ptrCopy(d.Spec.AutoPreserveFailedMachineMax),
			Selector:                     selector,
			Template:                     *tmpl,
			MachineClass:                 *d.Spec.Template.Spec.Class.DeepCopy(),
		},
	}
	if rolloutAfter != nil {
		ms.Annotations = map[string]string{AnnotationRolloutAfter: rolloutAfter.UTC().Format(time.RFC3339)}
	}
	// The deployment's controller reference; the scheme knows the type, so
	// this cannot fail.
	_ = controllerutil.SetControllerReference(d, ms, r.Client.Scheme())
	return ms
}

// scaleMachineSet sets a machine set's replicas and its replica annotations
// (the deployment's replicas and replicas+maxSurge). It writes only when
// something differs, with an optimistic lock: a decision made from a stale
// copy fails and is retried. ms is updated in place (a planned step knows
// whether it changes the replicas: rolloutPlan).
func (r *Reconciler) scaleMachineSet(ctx context.Context, s *scope, ms *v1alpha1.MachineSet, replicas int32) error {
	return r.writeReplicas(ctx, s, ms, replicas, false, "")
}

// resizeMachineSet is scaleMachineSet for a decision made from the
// deployment's machines rather than from the set's status (the in-place
// rollout's sizing and moves): the write is refused only if the set's
// replicas changed since ms was read, not whenever the set controller
// wrote its status meanwhile, which it does on every machine it sees move.
// Its event says that the set was sized to its machines, which tells it
// from a scaling of the rollout's (a move's scaling that failed is made
// up for here).
func (r *Reconciler) resizeMachineSet(ctx context.Context, s *scope, ms *v1alpha1.MachineSet, replicas int32) error {
	return r.writeReplicas(ctx, s, ms, replicas, true, " to match its machines")
}

// resizeForMove is resizeMachineSet for the sets of machines an in-place
// rollout moved: the move's own event names the sets and their new sizes
// (moveUpdatedMachines), so the scaling writes none of its own.
func (r *Reconciler) resizeForMove(ctx context.Context, s *scope, ms *v1alpha1.MachineSet, replicas int32) error {
	_, err := r.patchReplicas(ctx, s, ms, replicas, true)
	return err
}

// writeReplicas is patchReplicas with an event when the replicas changed;
// why ends the event's note.
func (r *Reconciler) writeReplicas(ctx context.Context, s *scope, ms *v1alpha1.MachineSet, replicas int32, testReplicas bool, why string) error {
	from, err := r.patchReplicas(ctx, s, ms, replicas, testReplicas)
	if err != nil || from == replicas {
		return err
	}
	// One action per direction: a scale-down does not fold into the
	// scale-up's event (setup.Recorder).
	direction, action := "up", "ScaleUp"
	if replicas < from {
		direction, action = "down", "ScaleDown"
	}
	r.Recorder.Eventf(s.d, ms, corev1.EventTypeNormal, "ScalingMachineSet", action, "Scaled %s machine set %s from %d to %d%s", direction, ms.Name, from, replicas, why)
	return nil
}

// patchReplicas writes the replicas and the replica annotations (see
// scaleMachineSet) and returns the replicas the set had before.
func (r *Reconciler) patchReplicas(ctx context.Context, s *scope, ms *v1alpha1.MachineSet, replicas int32, testReplicas bool) (int32, error) {
	d := s.d
	from := ms.Spec.Replicas
	updated := ms.DeepCopy()
	annotationsChanged := setReplicaAnnotations(updated, d.Spec.Replicas, d.Spec.Replicas+maxSurge(d))
	if from == replicas && !annotationsChanged {
		return from, nil
	}
	updated.Spec.Replicas = replicas
	patch := client.MergeFromWithOptions(ms, client.MergeFromWithOptimisticLock{})
	if testReplicas {
		patch = replicasTestPatch(ms, updated)
	}
	if err := r.Client.Patch(ctx, updated, patch); err != nil {
		if testReplicas && apierrors.IsInvalid(err) {
			// The test failed: the replicas changed since ms was read. It
			// is a conflict like the lock's, retried by the same policy.
			err = apierrors.NewConflict(v1alpha1.GroupVersion.WithResource("machinesets").GroupResource(), ms.Name, err)
		}
		return from, fmt.Errorf("scaling machine set %s to %d: %w", ms.Name, replicas, err)
	}
	*ms = *updated
	if from != replicas {
		ctrl.LoggerFrom(ctx).Info("Scaled machine set", "machineSet", ms.Name, "from", from, "to", replicas)
	}
	return from, nil
}

// ptrCopy returns a copy of *p, nil for nil.
func ptrCopy[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
