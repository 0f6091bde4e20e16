package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// This file reads and changes the cluster the way MCM's framework does:
// node counts, the test MachineDeployment and its MachineSets, freeze
// events. The client reads from the API server directly (no cache).

// nodeCount is what MCM's GetNumberOfNodes and GetNumberOfReadyNodes count.
type nodeCount struct {
	total, ready int
	// notReady names the Nodes that are not Ready, for messages.
	notReady []string
}

func (n nodeCount) String() string {
	s := fmt.Sprintf("%d nodes, %d ready", n.total, n.ready)
	if len(n.notReady) > 0 {
		s += fmt.Sprintf(" (not ready: %s)", strings.Join(n.notReady, ", "))
	}
	return s
}

func (s *suite) countNodes(ctx context.Context) (nodeCount, error) {
	var nodes corev1.NodeList
	if err := s.c.List(ctx, &nodes); err != nil {
		return nodeCount{}, err
	}
	n := nodeCount{total: len(nodes.Items)}
	for _, node := range nodes.Items {
		if nodeReady(&node) {
			n.ready++
		} else {
			n.notReady = append(n.notReady, node.Name)
		}
	}
	return n, nil
}

func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// mustCountNodes counts nodes now, for a scenario's baseline.
func (s *suite) mustCountNodes(t *testing.T) nodeCount {
	t.Helper()
	n, err := s.countNodes(t.Context())
	require.NoError(t, err)
	return n
}

// waitNodes waits until the target cluster has exactly want Nodes and all
// of them are Ready: MCM's two checks, GetNumberOfNodes and
// GetNumberOfReadyNodes equal to initial+N.
func (s *suite) waitNodes(t *testing.T, want int) {
	t.Helper()
	s.eventually(t, fmt.Sprintf("%d nodes, all ready", want), func(ctx context.Context) (bool, string, error) {
		n, err := s.countNodes(ctx)
		return n.total == want && n.ready == want, n.String(), err
	})
}

// deployment reads the test MachineDeployment.
func (s *suite) deployment(ctx context.Context) (*v1alpha1.MachineDeployment, error) {
	md := &v1alpha1.MachineDeployment{}
	err := s.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: deploymentName}, md)
	return md, err
}

// patchDeployment changes the test MachineDeployment with a JSON merge
// patch, which needs no retry on conflicts (MCM's framework updates with
// RetryOnConflict to the same effect).
func (s *suite) patchDeployment(t *testing.T, patch string) {
	t.Helper()
	md := &v1alpha1.MachineDeployment{}
	md.Namespace, md.Name = namespace, deploymentName
	require.NoError(t, s.c.Patch(t.Context(), md, client.RawPatch(types.MergePatchType, []byte(patch))),
		"patching MachineDeployment %s with %s", deploymentName, patch)
}

// describeDeployment summarises a MachineDeployment's status for messages.
func describeDeployment(md *v1alpha1.MachineDeployment) string {
	st := md.Status
	conds := make([]string, 0, len(st.Conditions))
	for _, c := range st.Conditions {
		conds = append(conds, fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason))
	}
	return fmt.Sprintf("generation %d observed %d, replicas %d updated %d ready %d available %d unavailable %d, conditions [%s]",
		md.Generation, st.ObservedGeneration, st.Replicas, st.UpdatedReplicas, st.ReadyReplicas,
		st.AvailableReplicas, st.UnavailableReplicas, strings.Join(conds, " "))
}

// deploymentCondition returns the condition of type ct, or nil.
func deploymentCondition(md *v1alpha1.MachineDeployment, ct v1alpha1.MachineDeploymentConditionType) *v1alpha1.MachineDeploymentCondition {
	for i := range md.Status.Conditions {
		if md.Status.Conditions[i].Type == ct {
			return &md.Status.Conditions[i]
		}
	}
	return nil
}

// testMachineSets returns the MachineSets of the test MachineDeployment:
// those whose first owner is the deployment, MCM's getTestMachineSets rule.
func (s *suite) testMachineSets(ctx context.Context) ([]v1alpha1.MachineSet, error) {
	var sets v1alpha1.MachineSetList
	if err := s.c.List(ctx, &sets, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	var out []v1alpha1.MachineSet
	for _, ms := range sets.Items {
		if len(ms.OwnerReferences) > 0 && ms.OwnerReferences[0].Name == deploymentName {
			out = append(out, ms)
		}
	}
	return out, nil
}

// Event reasons of MCM's overshooting safety controller
// (gardener/machine-controller-manager pkg/controller/machine_safety.go),
// which machina keeps.
const (
	reasonFroze   = "FrozeMachineSet"
	reasonUnfroze = "UnfrozeMachineSet"
)

// freezeEvents counts, per reason, the FrozeMachineSet and
// UnfrozeMachineSet events about the test MachineSets: MCM's
// machineSetFreezeEventCount, split by reason.
func (s *suite) freezeEvents(ctx context.Context) (map[string]int, error) {
	sets, err := s.testMachineSets(ctx)
	if err != nil {
		return nil, err
	}
	counts := map[string]int{reasonFroze: 0, reasonUnfroze: 0}
	for _, ms := range sets {
		for reason := range counts {
			var events corev1.EventList
			sel := fields.SelectorFromSet(fields.Set{"reason": reason, "involvedObject.uid": string(ms.UID)})
			if err := s.c.List(ctx, &events, client.InNamespace(namespace), client.MatchingFieldsSelector{Selector: sel}); err != nil {
				return nil, err
			}
			for _, e := range events.Items {
				counts[reason] += occurrences(&e)
			}
		}
	}
	return counts, nil
}

// occurrences is how many times e happened: events.k8s.io/v1 folds repeats
// into one Event's series, core/v1 into its count.
func occurrences(e *corev1.Event) int {
	n := max(1, int(e.Count))
	if e.Series != nil {
		n = max(n, int(e.Series.Count))
	}
	return n
}

// deploymentMachines returns the machines that carry the test selector.
func (s *suite) deploymentMachines(ctx context.Context) ([]v1alpha1.Machine, error) {
	var machines v1alpha1.MachineList
	err := s.c.List(ctx, &machines, client.InNamespace(namespace), client.MatchingLabels{selectorKey: selectorValue})
	return machines.Items, err
}

// machineNames lists every Machine of the namespace by name, for messages
// and for "no machine is left" checks.
func (s *suite) machineNames(ctx context.Context) ([]string, error) {
	var machines v1alpha1.MachineList
	if err := s.c.List(ctx, &machines, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(machines.Items))
	for _, m := range machines.Items {
		names = append(names, m.Name)
	}
	slices.Sort(names)
	return names, nil
}
