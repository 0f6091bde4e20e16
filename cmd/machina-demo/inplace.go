package main

import (
	"context"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// configLabel is the machine label the in-place step adds to the
// deployment's template: a template change, so a new MachineSet, that the
// machines take without new VMs.
const configLabel = "demo.machina.io/config"

// inPlaceUpdate switches the deployment to the InPlaceUpdate strategy and
// changes its template: every node is drained, updated by its node agent
// (played by the virtualnode driver, docs/in-place-updates.md) and its
// machine moved to the new MachineSet, one at a time, with no machine (and
// so no VM) created or deleted.
func (d *demo) inPlaceUpdate(ctx context.Context, step func(string, func(*snapshot) bool) error) error {
	before, err := takeSnapshot(ctx, d.client)
	if err != nil {
		return err
	}
	names := machineNames(before)

	d.screen.Message("In-place update: MachineDeployment %s to strategy InPlaceUpdate (Auto, maxUnavailable 1) and machine label %s=v2",
		deploymentName, configLabel)
	patch := fmt.Sprintf(`{"spec":{"strategy":{"type":"InPlaceUpdate","rollingUpdate":null,`+
		`"inPlaceUpdate":{"orchestrationType":"Auto","maxUnavailable":1,"maxSurge":0}},`+
		`"template":{"metadata":{"labels":{%q:"v2"}}}}}`, configLabel)
	if err := d.patchDeployment(ctx, patch); err != nil {
		return err
	}
	return step(fmt.Sprintf("updated in place: the same %d machines, now in the MachineSet of template %s=v2, their Nodes updated by their agents",
		replicas, configLabel),
		func(s *snapshot) bool {
			return s.settled(deploymentName, largeClass) &&
				slices.Equal(machineNames(s), names) && s.updatedInPlace(configLabel)
		})
}

// machineNames lists the names of the snapshot's machines, sorted.
func machineNames(s *snapshot) []string {
	names := make([]string, 0, len(s.machines))
	for i := range s.machines {
		names = append(names, s.machines[i].Name)
	}
	return names
}

// updatedInPlace tells whether every machine belongs to a MachineSet whose
// template has label=v2, and has a Node that names that set as the update
// it applied last. (The moved machine keeps its own labels but for the
// set's selector, as in MCM.)
func (s *snapshot) updatedInPlace(label string) bool {
	for i := range s.machines {
		m := &s.machines[i]
		owner := metav1.GetControllerOf(m)
		n := s.nodeOf(m)
		if owner == nil || n == nil ||
			n.Annotations[v1alpha1.AnnotationKeyNodeCurrent] != owner.Name {
			return false
		}
		for j := range s.sets {
			if s.sets[j].Name == owner.Name && s.sets[j].Spec.Template.Labels[label] != "v2" {
				return false
			}
		}
	}
	return true
}
