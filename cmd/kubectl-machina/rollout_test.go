package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/internal/process"
)

func (p *plugin) testRollout(t *testing.T) {
	const ns = "rollout"
	p.namespace(t, ns)
	d := p.deployment(t, ns, "web", 3, v1alpha1.MachineDeploymentStatus{Replicas: 4, UpdatedReplicas: 2, ReadyReplicas: 3, AvailableReplicas: 3})
	p.machineSet(t, d, "web-aaa", "1", 2, v1alpha1.MachineSetStatus{Replicas: 2}, map[string]string{changeCauseAnnotation: "kubectl apply --filename=web.yaml"})
	p.machineSet(t, d, "web-bbb", "3", 2, v1alpha1.MachineSetStatus{Replicas: 2}, map[string]string{revisionHistoryAnnotation: "2"})
	now := time.Now()

	t.Run("history", func(t *testing.T) {
		out, err := p.run(t, now, ns, "rollout", "history", "web")
		require.NoError(t, err)
		golden(t, "rollout-history", out)

		out, err = p.run(t, now, ns, "rollout", "history", "web", "--revision=1")
		require.NoError(t, err)
		golden(t, "rollout-history-revision", out)

		out, err = p.run(t, now, ns, "rollout", "history", "web", "--revision=3", "-o", "name")
		require.NoError(t, err)
		require.Equal(t, "machineset.machine.sapcloud.io/web-bbb\n", out)

		_, err = p.run(t, now, ns, "rollout", "history", "web", "--revision=7")
		require.EqualError(t, err, `unable to find the specified revision 7 in the history of machinedeployment "web"`)
	})

	t.Run("status", func(t *testing.T) {
		out, err := p.run(t, now, ns, "rollout", "status", "web", "--watch=false")
		require.NoError(t, err, "--watch=false reports and exits 0, as kubectl")
		require.Equal(t, "Waiting for machinedeployment \"web\" rollout to finish: 2 out of 3 new machines have been updated...\n", out)

		// It waits, printing each new state, until the rollout is done.
		buf := &process.Buffer{}
		done := make(chan error, 1)
		go func() { done <- p.runAt(t.Context(), now, ns, buf, "rollout", "status", "web", "--timeout=2m") }()
		p.eventually(t, func() bool { return strings.Contains(buf.String(), "2 out of 3") })
		p.setStatus(t, d, v1alpha1.MachineDeploymentStatus{Replicas: 4, UpdatedReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 3})
		p.eventually(t, func() bool { return strings.Contains(buf.String(), "1 old machines") })
		p.setStatus(t, d, v1alpha1.MachineDeploymentStatus{Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 2, AvailableReplicas: 2})
		p.eventually(t, func() bool { return strings.Contains(buf.String(), "2 of 3 updated") })
		p.setStatus(t, d, v1alpha1.MachineDeploymentStatus{Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 3})
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(time.Minute):
			t.Fatal("rollout status did not return once the rollout was done")
		}
		golden(t, "rollout-status", buf.String())

		// A rollout that does not finish in time fails, as kubectl's.
		p.setStatus(t, d, v1alpha1.MachineDeploymentStatus{Replicas: 4, UpdatedReplicas: 2, ReadyReplicas: 3, AvailableReplicas: 3})
		_, err = p.run(t, now, ns, "rollout", "status", "web", "--timeout=2s")
		require.EqualError(t, err, `timed out waiting for the rollout of machinedeployment "web" to finish`)

		// A deployment past its progress deadline fails at once.
		p.setStatus(t, d, v1alpha1.MachineDeploymentStatus{Replicas: 4, UpdatedReplicas: 2, Conditions: []v1alpha1.MachineDeploymentCondition{{
			Type: v1alpha1.MachineDeploymentProgressing, Status: v1alpha1.ConditionFalse, Reason: "ProgressDeadlineExceeded",
		}}})
		_, err = p.run(t, now, ns, "rollout", "status", "web")
		require.EqualError(t, err, `machinedeployment "web" exceeded its progress deadline`)
	})

	t.Run("pause, undo, resume", func(t *testing.T) {
		out, err := p.run(t, now, ns, "rollout", "pause", "web")
		require.NoError(t, err)
		require.Equal(t, "machinedeployment.machine.sapcloud.io/web paused\n", out)
		require.True(t, p.getDeployment(t, d).Spec.Paused)

		_, err = p.run(t, now, ns, "rollout", "pause", "web")
		require.EqualError(t, err, "machinedeployment.machine.sapcloud.io/web is already paused")
		_, err = p.run(t, now, ns, "rollout", "undo", "web")
		require.ErrorContains(t, err, "you cannot roll back a paused machinedeployment")
		require.Nil(t, p.getDeployment(t, d).Spec.RollbackTo)

		out, err = p.run(t, now, ns, "rollout", "resume", "web")
		require.NoError(t, err)
		require.Equal(t, "machinedeployment.machine.sapcloud.io/web resumed\n", out)
		require.False(t, p.getDeployment(t, d).Spec.Paused)

		_, err = p.run(t, now, ns, "rollout", "undo", "web", "--to-revision=2")
		require.EqualError(t, err, `unable to find the specified revision 2 in the history of machinedeployment "web"`, "revision 2 lives on only in web-bbb's revision-history")
		require.Nil(t, p.getDeployment(t, d).Spec.RollbackTo)

		out, err = p.run(t, now, ns, "rollout", "undo", "web", "--to-revision=1")
		require.NoError(t, err)
		require.Equal(t, "machinedeployment.machine.sapcloud.io/web rolled back\n", out)
		require.Equal(t, &v1alpha1.RollbackConfig{Revision: 1}, p.getDeployment(t, d).Spec.RollbackTo)
	})

	t.Run("restart", func(t *testing.T) {
		require.Nil(t, p.getDeployment(t, d).Spec.RolloutAfter)
		out, err := p.run(t, now, ns, "rollout", "restart", "machinedeployment/web")
		require.NoError(t, err)
		require.Equal(t, "machinedeployment.machine.sapcloud.io/web restarted\n", out)
		got := p.getDeployment(t, d).Spec.RolloutAfter
		require.NotNil(t, got)
		require.True(t, got.Equal(&metav1.Time{Time: now.Truncate(time.Second)}), "rolloutAfter %v, want %v", got, now)

		// A later restart moves the time on; a bare name works too.
		later := now.Add(time.Hour)
		_, err = p.run(t, later, ns, "rollout", "restart", "web")
		require.NoError(t, err)
		require.True(t, p.getDeployment(t, d).Spec.RolloutAfter.Equal(&metav1.Time{Time: later.Truncate(time.Second)}))

		_, err = p.run(t, now, ns, "rollout", "restart", "machineset/web")
		require.EqualError(t, err, `"machineset/web" is not a MachineDeployment: give NAME or machinedeployment/NAME`)
		_, err = p.run(t, now, ns, "rollout", "restart", "nothere")
		require.ErrorContains(t, err, "not found")
	})
}

func (p *plugin) getDeployment(t *testing.T, d *v1alpha1.MachineDeployment) *v1alpha1.MachineDeployment {
	t.Helper()
	got := &v1alpha1.MachineDeployment{}
	require.NoError(t, p.c.Get(t.Context(), client.ObjectKeyFromObject(d), got))
	return got
}

// setStatus writes the deployment's status as its controller would, having
// seen its latest spec.
func (p *plugin) setStatus(t *testing.T, d *v1alpha1.MachineDeployment, st v1alpha1.MachineDeploymentStatus) {
	t.Helper()
	got := p.getDeployment(t, d)
	st.ObservedGeneration = got.Generation
	got.Status = st
	require.NoError(t, p.c.Status().Update(t.Context(), got))
}

// eventually waits for cond, polling, for at most a minute.
func (p *plugin) eventually(t *testing.T, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatal("condition not reached within a minute")
		case <-time.After(20 * time.Millisecond):
		}
	}
}
