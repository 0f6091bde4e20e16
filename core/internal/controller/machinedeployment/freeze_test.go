package machinedeployment_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/controllertest"
)

// unfreezeWithin bounds how long the deployment may take to act once the
// gate opens: well under the 30s a frozen sync waits before it looks again,
// so that only the gate's change notification can meet it.
const unfreezeWithin = 10 * time.Second

// testAPIServerFreeze freezes the deployment controller's gate, then asks for
// more machines of a new class in one update: the deployment must report the
// new generation (status writes go on) yet neither scale its machine set nor
// create a new one. Once the gate opens it must roll out at once.
func (s *suite) testAPIServerFreeze(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t)
	s.joiner(t, ns, 0)
	obs := controllertest.ObserveMachines(t, s.env.Config, s.env.Scheme, ns)
	d := newDeployment(ns, "apifreeze", 2)
	require.NoError(t, s.c.Create(ctx, d))
	s.waitComplete(t, d)
	require.Len(t, s.sets(t, ns), 1)

	s.gate.Freeze("test: API server unreachable", time.Now())
	t.Cleanup(func() { s.gate.Unfreeze() })
	mark := obs.Mark()
	s.update(t, d, func(d *v1alpha1.MachineDeployment) {
		d.Spec.Replicas = 4
		d.Spec.Template.Spec.Class.Name = "class-v2"
	})
	// The status write of a frozen sync comes where the scaling would be; once
	// it shows the new generation, the controller has decided.
	require.Eventually(t, func() bool {
		s.get(t, d)
		return d.Status.ObservedGeneration == d.Generation
	}, waitTimeout, poll, "frozen deployment did not keep its status up to date")
	sets := s.sets(t, ns)
	require.Len(t, sets, 1, "a machine set was created while frozen")
	assert.Equal(t, int32(2), sets[0].Spec.Replicas, "the machine set was scaled while frozen")
	for i, st := range obs.StatesSince(mark) {
		assert.Equal(t, 2, st.Count(live), "state %d while frozen", i)
	}

	s.gate.Unfreeze()
	require.Eventually(t, func() bool {
		for _, ms := range s.sets(t, ns) {
			if ms.Spec.Template.Spec.Class.Name == "class-v2" && ms.Spec.Replicas > 0 {
				return true
			}
		}
		return false
	}, unfreezeWithin, poll, "deployment did not roll out after the freeze")
	s.waitComplete(t, d)
	for _, m := range s.machines(t, ns) {
		assert.Equal(t, "class-v2", m.Spec.Class.Name)
	}
}
