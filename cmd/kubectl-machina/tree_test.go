package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// testTree: a deployment in the middle of a rollout (revision 2 has one
// Running machine with a Ready node and one Pending whose node has not
// joined; revision 1 keeps two Running machines on Ready nodes, shown as
// one line unless --show-all), with a Progressing condition whose message
// is longer than a terminal line (printed in full), a set without a
// deployment, and a machine without a set. -A adds a NAMESPACE column and
// the objects of every namespace.
func (p *plugin) testTree(t *testing.T) {
	const ns = "tree"
	p.namespace(t, ns)
	long := "In-place rollout to machine set \"web-v2\": machine web-v1-x failed its in-place update (In-place update of node tree-node-x failed: the agent could not apply the template) and is replaced by a fresh machine of the new template."
	d := p.deployment(t, ns, "web", 3, v1alpha1.MachineDeploymentStatus{Replicas: 4, UpdatedReplicas: 2, ReadyReplicas: 3, AvailableReplicas: 3, UnavailableReplicas: 1,
		Conditions: []v1alpha1.MachineDeploymentCondition{
			{Type: v1alpha1.MachineDeploymentAvailable, Status: v1alpha1.ConditionTrue, Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability."},
			{Type: v1alpha1.MachineDeploymentProgressing, Status: v1alpha1.ConditionFalse, Reason: "InPlaceUpdateFailed", Message: long},
		}})
	v2 := p.machineSet(t, d, "web-v2", "2", 2, v1alpha1.MachineSetStatus{Replicas: 2, ReadyReplicas: 1, AvailableReplicas: 1}, nil)
	v1 := p.machineSet(t, d, "web-v1", "1", 2, v1alpha1.MachineSetStatus{Replicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}, nil)
	objs := []client.Object{d, v2, v1}

	start := time.Now()
	running := func(node string) func(m *v1alpha1.Machine) {
		return func(m *v1alpha1.Machine) {
			m.Status.CurrentStatus = v1alpha1.CurrentStatus{Phase: v1alpha1.MachineRunning, LastUpdateTime: metav1.NewTime(start)}
			m.Status.LastOperation = v1alpha1.LastOperation{
				Type: v1alpha1.MachineOperationHealthCheck, State: v1alpha1.MachineStateSuccessful,
				Description: "Machine joined the cluster: node " + node + " is Ready", LastUpdateTime: metav1.NewTime(start),
			}
		}
	}
	objs = append(objs,
		p.machine(t, ns, "web-v2-a", v2, "tree-node-a", nil, running("tree-node-a")),
		p.machine(t, ns, "web-v2-b", v2, "tree-node-b", nil, func(m *v1alpha1.Machine) {
			m.Status.CurrentStatus = v1alpha1.CurrentStatus{Phase: v1alpha1.MachinePending, LastUpdateTime: metav1.NewTime(start)}
			m.Status.LastOperation = v1alpha1.LastOperation{
				Type: v1alpha1.MachineOperationCreate, State: v1alpha1.MachineStateSuccessful,
				Description: "Created the VM; waiting for node tree-node-b to join", LastUpdateTime: metav1.NewTime(start),
			}
		}),
		p.machine(t, ns, "web-v1-a", v1, "tree-node-c", nil, running("tree-node-c")),
		p.machine(t, ns, "web-v1-b", v1, "tree-node-d", nil, running("tree-node-d")),
		p.node(t, "tree-node-a", corev1.ConditionTrue, start),
		p.node(t, "tree-node-c", corev1.ConditionTrue, start),
		p.node(t, "tree-node-d", corev1.ConditionTrue, start),
	)
	// A set of its own and a machine of its own, still being created.
	lone := &v1alpha1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "batch"},
		Spec: v1alpha1.MachineSetSpec{
			Replicas: 0, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"set": "batch"}},
			MachineClass: class(), Template: machineTemplate(map[string]string{"set": "batch"}),
		},
	}
	p.create(t, lone, nil)
	objs = append(objs, lone, p.machine(t, ns, "debug", nil, "", nil, nil))

	now := latest(objs...).Add(10 * 24 * time.Hour)
	out, err := p.run(t, now, ns, "tree")
	require.NoError(t, err)
	golden(t, "tree-all", out)

	out, err = p.run(t, now, ns, "tree", "web")
	require.NoError(t, err)
	golden(t, "tree-web", out)
	require.Contains(t, out, long, "the message in full")

	out, err = p.run(t, now, ns, "tree", "web", "--show-all")
	require.NoError(t, err)
	golden(t, "tree-web-show-all", out)

	// Another namespace's deployment, seen with -A only.
	p.namespace(t, ns+"-other")
	other := p.deployment(t, ns+"-other", "api", 0, v1alpha1.MachineDeploymentStatus{})
	out, err = p.run(t, other.CreationTimestamp.Add(time.Hour), ns, "tree", "-A")
	require.NoError(t, err)
	require.Contains(t, out, "NAMESPACE")
	require.Regexp(t, `(?m)^tree-other\s+MachineDeployment/api\s`, out)
	require.Regexp(t, `(?m)^tree\s+MachineDeployment/web\s`, out)
	_, err = p.run(t, now, ns, "tree", "-A", "web")
	require.EqualError(t, err, "a MachineDeployment name cannot be given with --all-namespaces")

	_, err = p.run(t, now, ns, "tree", "nope")
	require.EqualError(t, err, `machinedeployments.machine.sapcloud.io "nope" not found in namespace "tree"`)

	out, err = p.run(t, now, "default", "tree")
	require.NoError(t, err)
	require.Equal(t, "No MachineDeployments, MachineSets or Machines found in default namespace.\n", out)
}
