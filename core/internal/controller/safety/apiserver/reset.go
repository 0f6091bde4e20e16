package apiserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// ResetDescription is the lastOperation description of a machine whose
// health timeout was reset after an outage.
const ResetDescription = "Machine health timeout was reset because the API server was unreachable"

// ReasonHealthTimeoutReset is the reason of the event on a reset machine.
const ReasonHealthTimeoutReset = "HealthTimeoutReset"

// reset is one machine whose status the Checker reset.
type reset struct {
	key   client.ObjectKey
	since metav1.Time
}

// resetUnknownMachines gives every Unknown machine a fresh health timeout:
// its node may have looked unhealthy only because the API server was gone.
// The list comes from the API server, not the cache, which may have missed
// changes during the outage. A machine being deleted is left alone.
func (c *Checker) resetUnknownMachines(ctx context.Context, now time.Time) ([]reset, error) {
	list := &v1alpha1.MachineList{}
	if err := c.APIReader.List(ctx, list, client.InNamespace(c.Namespace)); err != nil {
		return nil, fmt.Errorf("listing machines: %w", err)
	}
	// Stored times have whole seconds; keep the value the cache will show.
	since := metav1.NewTime(now.Truncate(time.Second))
	var done []reset
	var errs []error
	for i := range list.Items {
		m := &list.Items[i]
		if m.Status.CurrentStatus.Phase != v1alpha1.MachineUnknown || m.DeletionTimestamp != nil {
			continue
		}
		base := m.DeepCopy()
		m.Status.UnhealthySince = &since
		m.Status.CurrentStatus.LastUpdateTime = since
		m.Status.LastOperation = v1alpha1.LastOperation{
			Description:    ResetDescription,
			State:          v1alpha1.MachineStateProcessing,
			Type:           v1alpha1.MachineOperationHealthCheck,
			LastUpdateTime: since,
		}
		// The optimistic lock keeps a concurrent decision of the Machine
		// controller from being overwritten; the next round retries.
		if err := c.Client.Status().Patch(ctx, m, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			errs = append(errs, fmt.Errorf("resetting machine %s: %w", m.Name, err))
			continue
		}
		done = append(done, reset{key: client.ObjectKeyFromObject(m), since: since})
		c.log.Info("Reset the health timeout of an Unknown machine after the API server outage", "machine", client.ObjectKeyFromObject(m))
		if c.Recorder != nil {
			c.Recorder.Eventf(m, nil, corev1.EventTypeNormal, ReasonHealthTimeoutReset, "ResetHealthTimeout", "%s", ResetDescription)
		}
	}
	return done, errors.Join(errs...)
}

// waitForCache waits until the cache the controllers read shows every
// reset: otherwise the Machine controller, unfrozen, could still see an
// Unknown machine with its old unhealthySince and fail it.
func (c *Checker) waitForCache(ctx context.Context, resets []reset) error {
	if c.Cache == nil || len(resets) == 0 {
		return nil
	}
	pending := resets
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, c.Timeout, true, func(ctx context.Context) (bool, error) {
		var left []reset
		for _, r := range pending {
			m := &v1alpha1.Machine{}
			err := c.Cache.Get(ctx, r.key, m)
			switch {
			case apierrors.IsNotFound(err):
				continue
			case err != nil:
				return false, err
			case m.Status.CurrentStatus.Phase != v1alpha1.MachineUnknown:
				continue // someone decided since; not an old view
			case m.Status.UnhealthySince != nil && !m.Status.UnhealthySince.Before(&r.since):
				continue
			}
			left = append(left, r)
		}
		pending = left
		return len(pending) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the cache to show %d reset machines: %w", len(pending), err)
	}
	return nil
}
