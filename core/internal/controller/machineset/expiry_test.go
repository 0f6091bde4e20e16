package machineset_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/controllertest"
)

// testExpireAfterIgnored: a set of no MachineDeployment does not expire its
// machines (the deployment's maxUnavailable bounds expiry) and says so.
func (s *suite) testExpireAfterIgnored(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t)
	ms := newSet(ns, "alone", 1)
	ms.Spec.Template.Spec.MachineConfiguration = &v1alpha1.MachineConfiguration{MachineExpireAfter: v1alpha1.NewDuration(time.Hour)}
	require.NoError(t, s.c.Create(ctx, ms))
	controllertest.Eventually(t, func() bool {
		list := &corev1.EventList{}
		if err := s.c.List(ctx, list, client.InNamespace(ns)); err != nil {
			return false
		}
		for _, e := range list.Items {
			if e.Reason == "ExpireAfterIgnored" && e.InvolvedObject.Name == "alone" {
				return true
			}
		}
		return false
	}, "no ExpireAfterIgnored event")
}
