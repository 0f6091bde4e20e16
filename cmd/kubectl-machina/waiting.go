package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/scaledown"
)

// waitingFor says, in sentences, what the manager waits for before the
// machine moves on: derived from the deletion step or the phase, the last
// operation, the Node and the timeouts, the way the machine controller
// decides (core/internal/controller/machine).
func waitingFor(ctx context.Context, c *clients, t *timeoutFlags, f *machineFacts, now time.Time) ([]string, error) {
	var out []string
	if f.set != nil && f.set.Labels[v1alpha1.FreezeLabel] == v1alpha1.FreezeValue {
		out = append(out, fmt.Sprintf("MachineSet %s to thaw: the safety controller froze it, so it creates no machines (deletions go on)", f.set.Name))
	}
	m := f.m
	if m.DeletionTimestamp != nil {
		lines, err := waitingForDeletion(ctx, c, t, f, now)
		return append(out, lines...), err
	}
	op := m.Status.LastOperation
	node := nodeName(m)
	creation := fmt.Sprintf("creation timeout in %s", until(now, m.CreationTimestamp.Add(t.creationTimeout(m))))
	switch phase := m.Status.CurrentStatus.Phase; phase {
	case "", v1alpha1.MachineCrashLoopBackOff:
		if op.State == v1alpha1.MachineStateFailed {
			out = append(out, fmt.Sprintf("the next try to create the VM; the last failed: %s (%s)", truncate(oneLine(op.Description), 160), creation))
		} else {
			out = append(out, fmt.Sprintf("the driver to create the VM (%s)", creation))
		}
	case v1alpha1.MachinePending:
		switch {
		case node == "":
			out = append(out, fmt.Sprintf("the VM to name its Node (%s)", creation))
		case f.node == nil:
			out = append(out, fmt.Sprintf("the Node %s to join (%s)", node, creation))
		case hasTaint(f.node, v1alpha1.CriticalComponentsNotReadyTaintKey):
			out = append(out, fmt.Sprintf("the taint %s to be removed from Node %s (%s)", v1alpha1.CriticalComponentsNotReadyTaintKey, node, creation))
		default:
			out = append(out, fmt.Sprintf("the Node %s to become healthy: %s (%s)", node, strings.Join(unhealthyBecause(f.node, t, m), ", "), creation))
		}
	case v1alpha1.MachineUnknown:
		why := "not registered"
		if f.node != nil {
			why = strings.Join(unhealthyBecause(f.node, t, m), ", ")
		}
		deadline := "health timeout disabled"
		if !healthTimeoutDisabled(m) {
			since := m.Status.UnhealthySince
			if since == nil {
				since = &m.Status.CurrentStatus.LastUpdateTime
			}
			deadline = fmt.Sprintf("health timeout in %s, then Failed and replaced", until(now, since.Add(t.healthTimeout(m))))
		}
		out = append(out, fmt.Sprintf("the Node %s to become healthy again: %s (%s)", node, why, deadline))
	case v1alpha1.MachineFailed:
		switch {
		case scaledown.Preserved(m, now):
			until := "while its preserve annotation stays"
			if exp := m.Status.CurrentStatus.PreserveExpiryTime; exp != nil {
				until = "until " + exp.UTC().Format(time.RFC3339)
			}
			out = append(out, fmt.Sprintf("nothing: Failed and preserved %s; its MachineSet runs another machine in its place meanwhile and deletes it then", until))
		case f.set != nil:
			out = append(out, fmt.Sprintf("MachineSet %s to delete and replace it (at most --machine-max-replacements unhealthy machines of a deployment are replaced at once)", f.set.Name))
		default:
			out = append(out, "someone to delete it: it belongs to no MachineSet, so nothing replaces it")
		}
	case v1alpha1.MachineRunning:
		out = append(out, "nothing: the machine is Running and its Node healthy")
	case v1alpha1.MachineAvailable:
		out = append(out, "nothing: the VM is Available (the manager runs without a target cluster, so no Node joins)")
	case v1alpha1.MachineInPlaceUpdating, v1alpha1.MachineInPlaceUpdateSuccessful, v1alpha1.MachineInPlaceUpdateFailed:
		out = append(out, fmt.Sprintf("the in-place update of Node %s (phase %s; see the Node's condition %s)", node, phase, v1alpha1.NodeInPlaceUpdate))
	default:
		out = append(out, fmt.Sprintf("the machine controller (phase %s)", phase))
	}
	return out, nil
}

func waitingForDeletion(ctx context.Context, c *clients, t *timeoutFlags, f *machineFacts, now time.Time) ([]string, error) {
	m := f.m
	op := m.Status.LastOperation
	failed := ""
	if op.State == v1alpha1.MachineStateFailed {
		failed = "; the last try failed: " + truncate(oneLine(op.Description), 160)
	}
	node := nodeName(m)
	switch m.Status.DeletionStep {
	case "", v1alpha1.DeletionStepTerminating:
		return []string{"the machine controller to start the deletion (phase Terminating)"}, nil
	case v1alpha1.DeletionStepGetVMStatus:
		return []string{"the driver's GetMachineStatus, to find the VM before the drain" + failed}, nil
	case v1alpha1.DeletionStepPreDrainHook:
		return waitingForHooks(m, v1alpha1.PreDrainDeleteHookAnnotationPrefix, "before the drain"), nil
	case v1alpha1.DeletionStepDrain:
		return waitingForDrain(ctx, c, t, f, now)
	case v1alpha1.DeletionStepDeleteVolumeAttachments:
		attachments, err := c.volumeAttachments(ctx, node)
		if err != nil {
			return nil, err
		}
		return []string{fmt.Sprintf("the %d VolumeAttachments of Node %s to go (the drain was forced, so nobody detaches them gracefully)", len(attachments), node)}, nil
	case v1alpha1.DeletionStepPreTerminateHook:
		return waitingForHooks(m, v1alpha1.PreTerminateDeleteHookAnnotationPrefix, "before the VM is deleted"), nil
	case v1alpha1.DeletionStepDeleteVM:
		return []string{"the driver to delete the VM" + failed}, nil
	case v1alpha1.DeletionStepDeleteNode:
		return []string{fmt.Sprintf("the Node %s to be deleted%s", node, failed)}, nil
	case v1alpha1.DeletionStepRemoveFinalizer:
		return []string{"the machine controller to remove the machine's finalizer" + failed}, nil
	}
	return []string{fmt.Sprintf("the machine controller (deletion step %s)", m.Status.DeletionStep)}, nil
}

// waitingForHooks names the lifecycle hooks of one family that hold the
// deletion; each is an annotation its owner removes when done.
func waitingForHooks(m *v1alpha1.Machine, prefix, where string) []string {
	names := v1alpha1.HookNames(m.Annotations, prefix)
	if len(names) == 0 {
		return []string{"the machine controller to see that the hooks " + where + " are gone"}
	}
	out := make([]string, 0, len(names))
	for _, name := range names {
		owner := m.Annotations[prefix+"/"+name]
		if owner == "" {
			owner = "its owner"
		}
		out = append(out, fmt.Sprintf("the hook %s %s: %s removes the annotation %s/%s when done", name, where, owner, prefix, name))
	}
	return out
}

// waitingForDrain reads the Node's pods to tell what the drain waits for,
// and when the manager gives up waiting and forces it.
func waitingForDrain(ctx context.Context, c *clients, t *timeoutFlags, f *machineFacts, now time.Time) ([]string, error) {
	m := f.m
	node := nodeName(m)
	if f.node == nil {
		return []string{fmt.Sprintf("the drain step to find Node %s gone and move on to deleting the VM", node)}, nil
	}
	deadline := v1alpha1.DrainClockStart(m).Add(t.drainTimeout(m))
	forced := m.Labels[v1alpha1.ForceDeletionLabel] == v1alpha1.ForceDeletionValue || !now.Before(deadline)
	if forced {
		return []string{fmt.Sprintf("a forced drain of Node %s: its pods are deleted without grace period and without asking PodDisruptionBudgets", node)}, nil
	}
	p, err := planDrain(ctx, c, node, m)
	var ruleErr *drainRuleError
	if errors.As(err, &ruleErr) {
		return []string{fmt.Sprintf("a fix of the MachineDrainRules: the drain of Node %s stops on %v", node, ruleErr)}, nil
	}
	if err != nil {
		return nil, err
	}
	timeout := fmt.Sprintf("drain timeout in %s, then forced", until(now, deadline))
	var out []string
	for _, b := range blockers(p) {
		out = append(out, fmt.Sprintf("drain blocked by %s (%s)", b, timeout))
	}
	for _, pp := range p.evict {
		if pp.waitFor != "" {
			out = append(out, fmt.Sprintf("pod %s to complete: %s says the drain waits for it and does not evict it (%s)", podKey(&pp.pod), pp.waitFor, timeout))
		}
	}
	for _, pp := range p.evict {
		if len(pp.attached) > 0 && pp.terminating {
			out = append(out, fmt.Sprintf("pod %s to go and its volumes to detach (%s)", podKey(&pp.pod), strings.Join(pp.attached, ", ")))
		}
	}
	if len(out) == 0 {
		if len(p.evict) == 0 {
			out = append(out, fmt.Sprintf("the drain of Node %s to notice it is empty", node))
		} else {
			out = append(out, fmt.Sprintf("the drain of Node %s: %d pods to go (%s)", node, len(p.evict), timeout))
		}
	}
	return out, nil
}
