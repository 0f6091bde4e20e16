package machineset_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/controllertest"
)

// unfreezeWithin bounds how long the set may take to act once the gate
// opens: well under the 30s a frozen sync waits before it looks again, so
// that only the gate's change notification can meet it.
const unfreezeWithin = 10 * time.Second

// testAPIServerFreeze freezes the gate, then asks for more machines and fails
// one: the set must report both (status writes go on) yet neither create nor
// delete a machine. Once the gate opens it must catch up at once.
func (s *suite) testAPIServerFreeze(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t)
	obs := controllertest.ObserveMachines(t, s.env.Config, s.env.Scheme, ns)
	ms := newSet(ns, "apifreeze", 2)
	require.NoError(t, s.c.Create(ctx, ms))
	s.waitSynced(t, ms, 2)
	before := s.machines(t, ns)
	for i := range before {
		require.NoError(t, controllertest.SetMachinePhase(ctx, s.c, &before[i], v1alpha1.MachineRunning))
	}
	controllertest.Eventually(t, func() bool {
		s.get(t, ms)
		return ms.Status.ReadyReplicas == 2
	}, "set did not count its Running machines")

	s.gate.Freeze("test: API server unreachable", time.Now())
	t.Cleanup(func() { s.gate.Unfreeze() })
	mark := obs.Mark()
	s.scale(t, ms, 4)
	victim := before[0]
	require.NoError(t, controllertest.SetMachinePhase(ctx, s.c, &victim, v1alpha1.MachineFailed))
	// The status write of a frozen sync comes where creations and deletions
	// would be; once it shows the new generation and the Failed machine, the
	// controller has decided with both changes in view.
	controllertest.Eventually(t, func() bool {
		s.get(t, ms)
		return ms.Status.ObservedGeneration == ms.Generation && ms.Status.ReadyReplicas == 1
	}, "frozen set did not keep its status up to date")
	assert.Equal(t, int32(2), ms.Status.Replicas)
	assert.ElementsMatch(t, names(before), names(s.machines(t, ns)), "machines changed while frozen")
	for i, st := range obs.StatesSince(mark) {
		assert.Len(t, st, 2, "state %d while frozen: a machine was created or deleted", i)
	}

	s.gate.Unfreeze()
	require.Eventually(t, func() bool {
		cur := s.machines(t, ns)
		if len(cur) != 4 {
			return false
		}
		return !slices.Contains(names(cur), victim.Name)
	}, unfreezeWithin, controllertest.Tick, "set did not scale up and replace the Failed machine after the freeze")
	s.waitSynced(t, ms, 4)
}
