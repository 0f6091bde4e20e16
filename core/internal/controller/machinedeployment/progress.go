package machinedeployment

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// calculateStatus derives the deployment's counts from its machine sets and
// sets the Available condition; the other conditions are carried over.
func calculateStatus(d *v1alpha1.MachineDeployment, sets []*v1alpha1.MachineSet, newMS *v1alpha1.MachineSet, now time.Time) v1alpha1.MachineDeploymentStatus {
	st := *d.Status.DeepCopy()
	var replicas, ready, available, preserved int32
	var failed []*v1alpha1.MachineSummary
	for _, ms := range sets {
		replicas += ms.Status.Replicas
		ready += ms.Status.ReadyReplicas
		available += ms.Status.AvailableReplicas
		preserved += ms.Status.PreservedFailedReplicas
		if ms.Status.FailedMachines != nil {
			for i := range *ms.Status.FailedMachines {
				failed = append(failed, (*ms.Status.FailedMachines)[i].DeepCopy())
			}
		}
	}
	st.ObservedGeneration = d.Generation
	st.Replicas = replicas
	st.UpdatedReplicas = 0
	if newMS != nil {
		st.UpdatedReplicas = newMS.Status.Replicas
	}
	st.ReadyReplicas = ready
	st.AvailableReplicas = available
	st.PreservedFailedReplicas = preserved
	st.UnavailableReplicas = max(sumReplicas(sets)-available, 0)
	st.FailedMachines = failed
	if sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err == nil {
		st.LabelSelector = sel.String()
	}

	if available >= d.Spec.Replicas-maxUnavailable(d) {
		setCondition(&st, newCondition(v1alpha1.MachineDeploymentAvailable, v1alpha1.ConditionTrue,
			ReasonMinimumReplicasAvailable, "Deployment has minimum availability.", now))
	} else {
		setCondition(&st, newCondition(v1alpha1.MachineDeploymentAvailable, v1alpha1.ConditionFalse,
			ReasonMinimumReplicasUnavailable, "Deployment does not have minimum availability.", now))
	}
	return st
}

// deploymentComplete reports whether every wanted machine is of the current
// template and available, and no old machine is left.
func deploymentComplete(d *v1alpha1.MachineDeployment, st *v1alpha1.MachineDeploymentStatus) bool {
	return st.UpdatedReplicas == d.Spec.Replicas &&
		st.Replicas == d.Spec.Replicas &&
		st.AvailableReplicas == d.Spec.Replicas &&
		st.ObservedGeneration >= d.Generation
}

// deploymentProgressing reports whether the new status shows progress over
// the stored one: more updated, ready or available machines, or fewer old
// ones.
func deploymentProgressing(d *v1alpha1.MachineDeployment, st *v1alpha1.MachineDeploymentStatus) bool {
	old := d.Status
	return st.UpdatedReplicas > old.UpdatedReplicas ||
		st.Replicas-st.UpdatedReplicas < old.Replicas-old.UpdatedReplicas ||
		st.ReadyReplicas > old.ReadyReplicas ||
		st.AvailableReplicas > old.AvailableReplicas
}

// deploymentTimedOut reports whether the deployment made no progress for
// progressDeadlineSeconds since the Progressing condition was last updated.
func deploymentTimedOut(d *v1alpha1.MachineDeployment, st *v1alpha1.MachineDeploymentStatus, now time.Time) bool {
	if d.Spec.ProgressDeadlineSeconds == nil {
		return false
	}
	c := getCondition(st, v1alpha1.MachineDeploymentProgressing)
	switch {
	case c == nil, c.Reason == ReasonNewMachineSetAvailable:
		return false
	case c.Reason == ReasonProgressDeadlineExceeded:
		return true
	}
	deadline := c.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second)
	return deadline.Before(now)
}

// rolloutStatus is calculateStatus plus the Progressing and ReplicaFailure
// conditions of a rollout, and the time after which the deployment must be
// synced again to notice a missed deadline (0: no need).
func rolloutStatus(d *v1alpha1.MachineDeployment, sets []*v1alpha1.MachineSet, newMS *v1alpha1.MachineSet, now time.Time) (v1alpha1.MachineDeploymentStatus, time.Duration) {
	st := calculateStatus(d, sets, newMS, now)
	// Progressing is kept with or without a deadline, as MCM does (clients
	// such as its integration tests wait for NewMachineSetAvailable); without
	// progressDeadlineSeconds a rollout just never times out.
	cur := getCondition(&d.Status, v1alpha1.MachineDeploymentProgressing)
	alreadyComplete := st.Replicas == st.UpdatedReplicas && cur != nil && cur.Reason == ReasonNewMachineSetAvailable
	if !alreadyComplete {
		subject := fmt.Sprintf("Machine deployment %q", d.Name)
		if newMS != nil {
			subject = fmt.Sprintf("Machine set %q", newMS.Name)
		}
		switch {
		case deploymentComplete(d, &st):
			setCondition(&st, newCondition(v1alpha1.MachineDeploymentProgressing, v1alpha1.ConditionTrue,
				ReasonNewMachineSetAvailable, subject+" has successfully progressed.", now))
		case deploymentProgressing(d, &st):
			c := newCondition(v1alpha1.MachineDeploymentProgressing, v1alpha1.ConditionTrue,
				ReasonMachineSetUpdated, subject+" is progressing.", now)
			// Progress refreshes lastUpdateTime (the deadline counts from it)
			// even when the reason stays the same.
			if cur != nil && cur.Status == v1alpha1.ConditionTrue {
				c.LastTransitionTime = cur.LastTransitionTime
			}
			removeCondition(&st, v1alpha1.MachineDeploymentProgressing)
			setCondition(&st, c)
		case deploymentTimedOut(d, &st, now):
			setCondition(&st, newCondition(v1alpha1.MachineDeploymentProgressing, v1alpha1.ConditionFalse,
				ReasonProgressDeadlineExceeded, subject+" has timed out progressing.", now))
		}
	}

	if failure := replicaFailure(sets, newMS); failure != nil {
		setCondition(&st, *failure)
	} else {
		removeCondition(&st, v1alpha1.MachineDeploymentReplicaFailure)
	}
	// Computed first: a return statement reads st and calls a function
	// taking &st in no specified order.
	after := recheckAfter(d, &st, now)
	return st, after
}

// replicaFailure returns the ReplicaFailure condition of the new machine set,
// else of any set, as a deployment condition.
func replicaFailure(sets []*v1alpha1.MachineSet, newMS *v1alpha1.MachineSet) *v1alpha1.MachineDeploymentCondition {
	find := func(ms *v1alpha1.MachineSet) *v1alpha1.MachineDeploymentCondition {
		for _, c := range ms.Status.Conditions {
			if c.Type == v1alpha1.MachineSetReplicaFailure && c.Status == v1alpha1.ConditionTrue {
				dc := fromMachineSetCondition(c)
				return &dc
			}
		}
		return nil
	}
	if newMS != nil {
		if c := find(newMS); c != nil {
			return c
		}
	}
	for _, ms := range sets {
		if c := find(ms); c != nil {
			return c
		}
	}
	return nil
}

// recheckAfter is when a rollout that is still running must be looked at
// again to report a missed deadline, even if nothing else happens.
func recheckAfter(d *v1alpha1.MachineDeployment, st *v1alpha1.MachineDeploymentStatus, now time.Time) time.Duration {
	c := getCondition(st, v1alpha1.MachineDeploymentProgressing)
	if d.Spec.ProgressDeadlineSeconds == nil || c == nil || deploymentComplete(d, st) ||
		c.Reason == ReasonProgressDeadlineExceeded || c.Reason == ReasonNewMachineSetAvailable {
		return 0
	}
	after := c.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second).Sub(now)
	return max(after, 0) + time.Second
}
