package machinedeployment

import (
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestResolveBounds(t *testing.T) {
	cases := []struct {
		name               string
		surge, unavailable intstr.IntOrString
		desired            int32
		wantS, wantU       int32
	}{
		{"absolute", intstr.FromInt32(2), intstr.FromInt32(1), 6, 2, 1},
		{"surge percent rounds up", intstr.FromString("25%"), intstr.FromInt32(0), 10, 3, 0},
		{"unavailable percent rounds down", intstr.FromInt32(1), intstr.FromString("25%"), 10, 1, 2},
		{"both zero after rounding means one unavailable", intstr.FromString("0%"), intstr.FromString("10%"), 5, 0, 1},
		{"both explicit zero", intstr.FromInt32(0), intstr.FromInt32(0), 3, 0, 1},
		{"percent of zero replicas", intstr.FromString("50%"), intstr.FromString("50%"), 0, 0, 1},
		{"hundred percent", intstr.FromString("100%"), intstr.FromString("100%"), 7, 7, 7},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, u, err := resolveBounds(c.surge, c.unavailable, c.desired)
			require.NoError(t, err)
			assert.Equal(t, c.wantS, s, "surge")
			assert.Equal(t, c.wantU, u, "unavailable")
		})
	}
	_, _, err := resolveBounds(intstr.FromString("ten"), intstr.FromInt32(0), 3)
	assert.Error(t, err)

	// Out of range: refused, never wrapped around or clamped.
	for _, c := range []struct {
		name               string
		surge, unavailable intstr.IntOrString
		desired            int32
		want               string
	}{
		{"surge percent beyond int32 (was -2147483647)", intstr.FromString("71582788300%"), intstr.FromInt32(0), 3, "exceeds the largest machine count"},
		{"unavailable percent beyond int32", intstr.FromInt32(1), intstr.FromString("100000000000%"), 3, "maxUnavailable"},
		{"unavailable above 100%", intstr.FromInt32(1), intstr.FromString("101%"), 3, "must not be more than 100%"},
		{"unavailable above 100% of zero replicas", intstr.FromInt32(1), intstr.FromString("150%"), 0, "must not be more than 100%"},
		{"replicas plus surge beyond int32", intstr.FromInt32(math.MaxInt32), intstr.FromInt32(0), 3, "exceeds the largest machine count"},
		{"negative surge", intstr.FromInt32(-1), intstr.FromInt32(0), 3, "must not be negative"},
		{"negative unavailable", intstr.FromInt32(1), intstr.FromInt32(-1), 3, "must not be negative"},
		{"signed percentage", intstr.FromString("+5%"), intstr.FromInt32(0), 3, "must be a number or a percentage"},
		{"percentage with blanks", intstr.FromString(" 5%"), intstr.FromInt32(0), 3, "must be a number or a percentage"},
		{"number as a string", intstr.FromString("5"), intstr.FromInt32(0), 3, "must be a number or a percentage"},
		{"huge percentage", intstr.FromString("99999999999999999999999%"), intstr.FromInt32(0), 1, "exceeds the largest machine count"},
	} {
		_, _, err := resolveBounds(c.surge, c.unavailable, c.desired)
		if assert.Error(t, err, c.name) {
			assert.Contains(t, err.Error(), c.want, c.name)
		}
	}
	// At the edge: exactly 2^31-1 machines in all is allowed.
	s, _, err := resolveBounds(intstr.FromInt32(math.MaxInt32-3), intstr.FromInt32(0), 3)
	require.NoError(t, err)
	assert.Equal(t, int32(math.MaxInt32-3), s)
	s, _, err = resolveBounds(intstr.FromString("99999999999999999999999%"), intstr.FromInt32(0), 0)
	require.NoError(t, err, "any percentage of zero replicas is zero")
	assert.Zero(t, s)
}

func rollingDeployment(replicas int32, surge, unavailable *intstr.IntOrString) *v1alpha1.MachineDeployment {
	d := &v1alpha1.MachineDeployment{ObjectMeta: metav1.ObjectMeta{Name: "d"}}
	d.Spec.Replicas = replicas
	d.Spec.Strategy.Type = v1alpha1.RollingUpdateMachineDeploymentStrategyType
	if surge != nil || unavailable != nil {
		d.Spec.Strategy.RollingUpdate = &v1alpha1.RollingUpdateMachineDeployment{}
		d.Spec.Strategy.RollingUpdate.MaxSurge = surge
		d.Spec.Strategy.RollingUpdate.MaxUnavailable = unavailable
	}
	return d
}

func ptrIntStr(v intstr.IntOrString) *intstr.IntOrString { return &v }

func TestMaxSurgeAndUnavailable(t *testing.T) {
	d := rollingDeployment(6, nil, nil)
	assert.Equal(t, int32(1), maxSurge(d), "default surge")
	assert.Equal(t, int32(0), maxUnavailable(d), "default unavailable")

	d = rollingDeployment(3, ptrIntStr(intstr.FromInt32(1)), ptrIntStr(intstr.FromInt32(10)))
	assert.Equal(t, int32(3), maxUnavailable(d), "capped at replicas")

	d = rollingDeployment(0, ptrIntStr(intstr.FromInt32(1)), ptrIntStr(intstr.FromInt32(1)))
	assert.Equal(t, int32(0), maxUnavailable(d), "nothing to lose at zero replicas")

	d.Spec.Strategy.Type = v1alpha1.RecreateMachineDeploymentStrategyType
	assert.Equal(t, int32(0), maxSurge(d))
	assert.Equal(t, int32(0), maxUnavailable(d))
}

func set(name string, replicas int32, created time.Time, annotations map[string]string) *v1alpha1.MachineSet {
	return &v1alpha1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name), CreationTimestamp: metav1.NewTime(created), Annotations: annotations},
		Spec:       v1alpha1.MachineSetSpec{Replicas: replicas},
	}
}

func maxAnn(n int32) map[string]string {
	return map[string]string{v1alpha1.MaxReplicasAnnotation: strconv.Itoa(int(n))}
}

func TestProportionalSizes(t *testing.T) {
	surge := ptrIntStr(intstr.FromInt32(3))
	unavail := ptrIntStr(intstr.FromInt32(2))
	cases := []struct {
		name     string
		replicas int32
		sets     []*v1alpha1.MachineSet
		want     map[string]int32
	}{
		{
			// Kubernetes' example: 10 replicas, surge 3, rollout half done,
			// scaled to 15: max goes 13 -> 18.
			name:     "scale up mid-rollout",
			replicas: 15,
			sets:     []*v1alpha1.MachineSet{set("old", 8, t0, maxAnn(13)), set("new", 5, t0.Add(time.Hour), maxAnn(13))},
			want:     map[string]int32{"old": 11, "new": 7},
		},
		{
			name:     "scale down mid-rollout",
			replicas: 5,
			sets:     []*v1alpha1.MachineSet{set("old", 8, t0, maxAnn(13)), set("new", 5, t0.Add(time.Hour), maxAnn(13))},
			want:     map[string]int32{"old": 5, "new": 3},
		},
		{
			name:     "leftover goes to the newest of equal sets when growing",
			replicas: 6,
			sets:     []*v1alpha1.MachineSet{set("a", 2, t0, maxAnn(4)), set("b", 2, t0.Add(time.Hour), maxAnn(4))},
			// Max 4 -> 9, +5 to share: each set's fraction is round(2*9/4)-2 =
			// 3; the newest comes first and takes 3, the other what is left.
			want: map[string]int32{"b": 5, "a": 4},
		},
		{
			name:     "scale to zero",
			replicas: 0,
			sets:     []*v1alpha1.MachineSet{set("old", 4, t0, maxAnn(8)), set("new", 3, t0.Add(time.Hour), maxAnn(8))},
			want:     map[string]int32{"old": 0, "new": 0},
		},
		{
			name:     "inactive sets are left out",
			replicas: 15,
			sets: []*v1alpha1.MachineSet{
				set("empty", 0, t0, maxAnn(13)), set("old", 8, t0.Add(time.Minute), maxAnn(13)), set("new", 5, t0.Add(time.Hour), maxAnn(13)),
			},
			want: map[string]int32{"old": 11, "new": 7},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := rollingDeployment(c.replicas, surge, unavail)
			got := proportionalSizes(d, c.sets)
			assert.Equal(t, c.want, got)
			var total int32
			for _, v := range got {
				total += v
			}
			if c.replicas > 0 {
				assert.Equal(t, c.replicas+maxSurge(d), total, "sizes add up to replicas+maxSurge")
			}
		})
	}
}

func TestNewMachineSetReplicasCountsMachinesNotYetDeleted(t *testing.T) {
	d := rollingDeployment(6, ptrIntStr(intstr.FromInt32(2)), ptrIntStr(intstr.FromInt32(1)))
	old := set("old", 5, t0, nil)
	old.Status.Replicas = 6 // scaled down a moment ago; one machine still there
	newMS := set("new", 2, t0.Add(time.Hour), nil)
	newMS.Status.Replicas = 2
	assert.Equal(t, int32(2), newMachineSetReplicas(d, []*v1alpha1.MachineSet{old, newMS}, newMS), "6+2 machines exist: no room")
	old.Status.Replicas = 5
	assert.Equal(t, int32(3), newMachineSetReplicas(d, []*v1alpha1.MachineSet{old, newMS}, newMS))
	old.Spec.Replicas, old.Status.Replicas = 0, 0
	assert.Equal(t, int32(6), newMachineSetReplicas(d, []*v1alpha1.MachineSet{old, newMS}, newMS), "never above replicas")

	rec := &v1alpha1.MachineDeployment{}
	rec.Spec.Replicas = 4
	rec.Spec.Strategy.Type = v1alpha1.RecreateMachineDeploymentStrategyType
	assert.Equal(t, int32(4), newMachineSetReplicas(rec, nil, set("n", 0, t0, nil)))
}

func TestAvailableOfIgnoresMachinesAboutToGo(t *testing.T) {
	ms := set("old", 5, t0, nil)
	ms.Status.AvailableReplicas = 6
	assert.Equal(t, int32(5), availableOf(ms))
	ms.Status.AvailableReplicas = 3
	assert.Equal(t, int32(3), availableOf(ms))
}

func template(labels map[string]string) v1alpha1.MachineTemplateSpec {
	return v1alpha1.MachineTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{"a": "b"}},
		Spec:       v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Kind: "MachineClass", Name: "small"}},
	}
}

func TestTemplateHash(t *testing.T) {
	base := template(map[string]string{"pool": "a"})
	h := templateHash(&base, nil, nil)

	// Stable: the same template always gives the same value, across runs and
	// versions (the value is part of machine set names and labels).
	assert.Equal(t, h, templateHash(base.DeepCopy(), nil, nil))
	assert.Equal(t, "2259581492", h, "hash of a fixed template changed: existing machine sets would roll")

	// The hash label and in-place fields do not count.
	withHash := base.DeepCopy()
	withHash.Labels[v1alpha1.DefaultMachineDeploymentUniqueLabelKey] = "123"
	assert.Equal(t, h, templateHash(withHash, nil, nil))
	inPlace := base.DeepCopy()
	inPlace.Spec.NodeTemplateSpec.Labels = map[string]string{"x": "y"}
	inPlace.Spec.NodeTemplateSpec.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}
	drain := v1alpha1.Duration{Duration: time.Hour}
	inPlace.Spec.MachineConfiguration = &v1alpha1.MachineConfiguration{MachineDrainTimeout: &drain}
	inPlace.Spec.Class.Kind = "OtherKind"
	assert.Equal(t, h, templateHash(inPlace, nil, nil))
	assert.True(t, sameRollingTemplate(&base, inPlace))

	// Rolling changes do.
	renamed := base.DeepCopy()
	renamed.Spec.Class.Name = "large"
	assert.NotEqual(t, h, templateHash(renamed, nil, nil))
	assert.False(t, sameRollingTemplate(&base, renamed))
	annotated := base.DeepCopy()
	annotated.Annotations["a"] = "c"
	assert.NotEqual(t, h, templateHash(annotated, nil, nil))
	one := int32(1)
	assert.NotEqual(t, h, templateHash(&base, &one, nil), "collision count changes the hash")
	ra := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	assert.NotEqual(t, h, templateHash(&base, nil, &ra), "a passed rolloutAfter changes the hash")
	later := metav1.NewTime(ra.Add(time.Hour))
	assert.NotEqual(t, templateHash(&base, nil, &ra), templateHash(&base, nil, &later), "each restart has a hash of its own")
}

func TestMachineSetName(t *testing.T) {
	n := machineSetName("workers", "2407963050")
	assert.Regexp(t, `^workers-[a-z0-9]{5}$`, n)
	long := machineSetName(string(make([]byte, 300)), "1")
	assert.LessOrEqual(t, len(long)+6, 253, "room for the machine suffix")
}

func TestParseTriggerDeletion(t *testing.T) {
	got := parseTriggerDeletion("m1~2026-01-01T10:00:00Z, m2 ,bad~notatime,~2026-01-01T10:00:00Z,m1~2026-01-02T10:00:00Z,,m3", t0)
	require.Len(t, got, 3)
	assert.Equal(t, triggerEntry{raw: "m1~2026-01-01T10:00:00Z", name: "m1", at: "2026-01-01T10:00:00Z"}, got[0])
	assert.Equal(t, triggerEntry{raw: "m2", name: "m2", at: t0.Format(time.RFC3339)}, got[1])
	assert.Equal(t, "m3", got[2].name)
	assert.Empty(t, parseTriggerDeletion("", t0))
}

func TestHistoryToDelete(t *testing.T) {
	mk := func(name string, rev int, replicas int32, statusReplicas int32) *v1alpha1.MachineSet {
		ms := set(name, replicas, t0, map[string]string{v1alpha1.RevisionAnnotation: strconv.Itoa(rev)})
		ms.Status.Replicas = statusReplicas
		return ms
	}
	old := []*v1alpha1.MachineSet{mk("r3", 3, 0, 0), mk("r1", 1, 0, 0), mk("r2-busy", 2, 0, 1), mk("r4", 4, 0, 0)}
	got := historyToDelete(old, 1)
	var names []string
	for _, ms := range got {
		names = append(names, ms.Name)
	}
	assert.Equal(t, []string{"r1", "r3"}, names, "lowest revisions first, busy set kept")
	assert.Empty(t, historyToDelete(old, 4))
}

func TestRevisionHelpers(t *testing.T) {
	sets := []*v1alpha1.MachineSet{
		set("a", 0, t0, map[string]string{v1alpha1.RevisionAnnotation: "3"}),
		set("b", 0, t0, map[string]string{v1alpha1.RevisionAnnotation: "7"}),
		set("c", 0, t0, map[string]string{v1alpha1.RevisionAnnotation: "5"}),
		set("d", 0, t0, map[string]string{v1alpha1.RevisionAnnotation: "garbage"}),
	}
	assert.Equal(t, int64(7), maxRevision(sets))
	assert.Equal(t, int64(5), previousRevision(sets))
	assert.Equal(t, "1,2,3", appendRevisionHistory("1,2", "3"))
	assert.Equal(t, "9", appendRevisionHistory("", "9"))

	d := rollingDeployment(3, nil, nil)
	d.Annotations = map[string]string{"team": "x", v1alpha1.TriggerDeletionByMCMAnnotation: "m1", v1alpha1.RevisionAnnotation: "7"}
	ms := set("n", 0, t0, map[string]string{v1alpha1.RevisionAnnotation: "2"})
	assert.True(t, setNewMachineSetAnnotations(d, ms, 8, true))
	assert.Equal(t, "8", ms.Annotations[v1alpha1.RevisionAnnotation])
	assert.Equal(t, "2", ms.Annotations[AnnotationRevisionHistory], "rollback keeps the old revision in the history")
	assert.Equal(t, "x", ms.Annotations["team"])
	assert.NotContains(t, ms.Annotations, v1alpha1.TriggerDeletionByMCMAnnotation)
	assert.NotContains(t, ms.Annotations, v1alpha1.DesiredReplicasAnnotation, "replica annotations only on creation")
	assert.False(t, setNewMachineSetAnnotations(d, ms, 8, true), "nothing left to change")
}

func TestProgressConditions(t *testing.T) {
	deadline := int32(60)
	d := rollingDeployment(3, ptrIntStr(intstr.FromInt32(1)), ptrIntStr(intstr.FromInt32(1)))
	d.Generation = 2
	d.Spec.ProgressDeadlineSeconds = &deadline
	d.Status.ObservedGeneration = 2
	d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.AvailableReplicas = 3, 1, 2
	d.Status.Conditions = []v1alpha1.MachineDeploymentCondition{
		newCondition(v1alpha1.MachineDeploymentProgressing, v1alpha1.ConditionTrue, ReasonNewMachineSetCreated, "", t0),
	}
	newMS := set("new", 2, t0, nil)
	oldMS := set("old", 2, t0, nil)
	newMS.Status.Replicas, oldMS.Status.Replicas = 1, 2
	oldMS.Status.AvailableReplicas = 2

	// No progress, within the deadline.
	st, recheck := rolloutStatus(d, []*v1alpha1.MachineSet{oldMS, newMS}, newMS, t0.Add(30*time.Second))
	assert.Equal(t, ReasonNewMachineSetCreated, getCondition(&st, v1alpha1.MachineDeploymentProgressing).Reason)
	assert.Equal(t, 31*time.Second, recheck)
	assert.Equal(t, ReasonMinimumReplicasAvailable, getCondition(&st, v1alpha1.MachineDeploymentAvailable).Reason)

	// No progress, past the deadline.
	st, recheck = rolloutStatus(d, []*v1alpha1.MachineSet{oldMS, newMS}, newMS, t0.Add(61*time.Second))
	c := getCondition(&st, v1alpha1.MachineDeploymentProgressing)
	assert.Equal(t, ReasonProgressDeadlineExceeded, c.Reason)
	assert.Equal(t, v1alpha1.ConditionFalse, c.Status)
	assert.Zero(t, recheck)

	// Progress refreshes the condition.
	newMS.Status.Replicas = 2
	st, _ = rolloutStatus(d, []*v1alpha1.MachineSet{oldMS, newMS}, newMS, t0.Add(61*time.Second))
	c = getCondition(&st, v1alpha1.MachineDeploymentProgressing)
	assert.Equal(t, ReasonMachineSetUpdated, c.Reason)
	assert.Equal(t, t0.Add(61*time.Second), c.LastUpdateTime.Time)

	// Complete.
	oldMS.Spec.Replicas, oldMS.Status.Replicas, oldMS.Status.AvailableReplicas = 0, 0, 0
	newMS.Spec.Replicas, newMS.Status.Replicas, newMS.Status.AvailableReplicas = 3, 3, 3
	st, _ = rolloutStatus(d, []*v1alpha1.MachineSet{oldMS, newMS}, newMS, t0.Add(90*time.Second))
	assert.Equal(t, ReasonNewMachineSetAvailable, getCondition(&st, v1alpha1.MachineDeploymentProgressing).Reason)
	assert.True(t, deploymentComplete(d, &st))
}

func TestPausedConditions(t *testing.T) {
	deadline := int32(60)
	d := rollingDeployment(3, nil, nil)
	d.Spec.ProgressDeadlineSeconds = &deadline
	d.Spec.Paused = true
	checkPausedConditions(d, t0)
	c := getCondition(&d.Status, v1alpha1.MachineDeploymentProgressing)
	require.NotNil(t, c)
	assert.Equal(t, ReasonDeploymentPaused, c.Reason)
	assert.Equal(t, v1alpha1.ConditionUnknown, c.Status)
	d.Spec.Paused = false
	checkPausedConditions(d, t0.Add(time.Hour))
	c = getCondition(&d.Status, v1alpha1.MachineDeploymentProgressing)
	assert.Equal(t, ReasonDeploymentResumed, c.Reason)
	assert.Equal(t, t0.Add(time.Hour), c.LastUpdateTime.Time, "the deadline counts from the resume")
}

func TestIsScalingEvent(t *testing.T) {
	d := rollingDeployment(5, nil, nil)
	a := set("a", 3, t0, map[string]string{v1alpha1.DesiredReplicasAnnotation: "5"})
	assert.False(t, isScalingEvent(d, []*v1alpha1.MachineSet{a}))
	d.Spec.Replicas = 4
	assert.True(t, isScalingEvent(d, []*v1alpha1.MachineSet{a}))
	a.Spec.Replicas = 0
	assert.False(t, isScalingEvent(d, []*v1alpha1.MachineSet{a}), "inactive sets do not count")
}

// TestThrottleStreams: a deployment's events are throttled in three
// streams per machine set: its reports, its changes not observed yet, and
// its machines' events.
func TestThrottleStreams(t *testing.T) {
	ms := &v1alpha1.MachineSet{ObjectMeta: metav1.ObjectMeta{Name: "new", UID: "set-uid", Generation: 3}}
	ms.Status.ObservedGeneration = 3
	assert.Equal(t, types.UID("set-uid"), streamOf(ms), "a report of an observed spec")
	ms.Generation = 4
	assert.Equal(t, types.UID("set-uid/spec"), streamOf(ms), "a new spec (the deployment's own scaling)")

	m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: v1alpha1.GroupVersion.String(), Kind: "MachineSet", Name: "new", UID: "set-uid", Controller: new(true)},
	}}}
	assert.Equal(t, types.UID("set-uid/machines"), streamOf(m), "a machine of the set")
	assert.Equal(t, types.UID(""), streamOf(&v1alpha1.Machine{}), "a machine without controller")
}

// TestRolloutMarksMissingAndApply: missing reads a node without changing it and says
// whether apply would; after apply nothing is missing.
func TestRolloutMarksMissingAndApply(t *testing.T) {
	ours := map[string]string{v1alpha1.ClusterAutoscalerScaleDownDisabledAnnotation: "true", v1alpha1.ClusterAutoscalerScaleDownDisabledByMCMAnnotation: "true"}
	users := map[string]string{v1alpha1.ClusterAutoscalerScaleDownDisabledAnnotation: "true"}
	tainted := []corev1.Taint{preferNoScheduleTaint}
	otherValue := []corev1.Taint{{Key: preferNoScheduleTaint.Key, Value: "old", Effect: preferNoScheduleTaint.Effect}}
	candidate := map[string]string{v1alpha1.LabelKeyNodeCandidateForUpdate: "true"}
	cases := []struct {
		name        string
		want        rolloutMarks
		labels, ann map[string]string
		taints      []corev1.Taint
		missing     bool
		wantAnn     map[string]string
		wantTaints  []corev1.Taint
	}{
		{"old node: taint and annotation", rolloutMarks{taint: true, scaleDownDisabled: true}, nil, nil, nil, true, ours, tainted},
		{"old node already marked", rolloutMarks{taint: true, scaleDownDisabled: true}, nil, ours, tainted, false, ours, tainted},
		{"taint of another value is corrected", rolloutMarks{taint: true, scaleDownDisabled: true}, nil, ours, otherValue, true, ours, tainted},
		{"a user's annotation is left alone", rolloutMarks{scaleDownDisabled: true}, nil, users, nil, false, users, nil},
		{"and not removed at the end", rolloutMarks{}, nil, users, nil, false, users, nil},
		{"ours is removed at the end", rolloutMarks{untaint: true}, nil, ours, nil, true, map[string]string{}, nil},
		{"new node loses the taint", rolloutMarks{untaint: true}, nil, nil, tainted, true, nil, []corev1.Taint{}},
		{"a stale in-place candidate keeps it", rolloutMarks{untaint: true}, candidate, nil, tainted, false, nil, tainted},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: c.labels, Annotations: c.ann}, Spec: corev1.NodeSpec{Taints: c.taints}}
			before := n.DeepCopy()
			assert.Equal(t, c.missing, c.want.missing(n), "missing")
			assert.Equal(t, before, n, "missing changed the node")
			c.want.apply(n)
			assert.False(t, c.want.missing(n), "missing after apply")
			if len(c.wantAnn) == 0 {
				assert.Empty(t, n.Annotations)
			} else {
				assert.Equal(t, c.wantAnn, n.Annotations)
			}
			if len(c.wantTaints) == 0 {
				assert.Empty(t, n.Spec.Taints)
			} else {
				assert.Equal(t, c.wantTaints, n.Spec.Taints)
			}
		})
	}
}
