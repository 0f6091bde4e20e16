package machineset_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/controllertest"
)

// staleRemoved reads mcm_machine_stale_machines_total from the registry the
// manager serves.
func staleRemoved(t *testing.T) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == "mcm_machine_stale_machines_total" {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatal("mcm_machine_stale_machines_total is not registered")
	return 0
}

// The set copies the annotation effective-creation-timeout to the machines
// it creates, and counts the Failed machines it replaces in
// mcm_machine_stale_machines_total (MCM parity).
func (s *suite) testMCMParity(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t)
	ms := newSet(ns, "parity", 2)
	ms.Annotations = map[string]string{v1alpha1.EffectiveCreationTimeoutAnnotation: "45m"}
	require.NoError(t, s.c.Create(ctx, ms))
	s.waitSynced(t, ms, 2)
	for _, m := range s.machines(t, ns) {
		assert.Equal(t, "45m", m.Annotations[v1alpha1.EffectiveCreationTimeoutAnnotation], "machine %s", m.Name)
	}

	before := staleRemoved(t)
	victim := s.machines(t, ns)[0]
	require.NoError(t, controllertest.SetMachinePhase(ctx, s.c, &victim, v1alpha1.MachineFailed))
	controllertest.Eventually(t, func() bool { return staleRemoved(t) == before+1 }, "the replaced Failed machine was not counted")
}
