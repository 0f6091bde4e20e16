package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/cmd/internal/manifests"
	"github.com/machina-io/machina/core/api/v1alpha1"
)

// The cluster-autoscaler's mcm provider (gardener/autoscaler,
// cluster-autoscaler/cloudprovider/mcm), played step by step against the
// real manager and virtualnode driver: what it reads and writes, by its own
// rules, and what it needs to find.
const (
	// mcmDeployment is the Deployment its checkMCMAvailableReplicas reads.
	mcmDeployment = "machine-controller-manager"
	// caPool is a node group, --nodes=0:5:default.ca-pool.
	caPool = "ca-pool"
	// defaultPriority is what the provider expects of a machine it did not
	// choose (its defaultPriorityValue, MCM's default).
	defaultPriority = "3"
)

// TestClusterAutoscalerContract plays the autoscaler's checks and calls:
// the Deployment it looks up (deploy/overlays/autoscaler) and the readiness
// its availability rests on, the node template checks of scale from zero
// (against the manager's ScaleFromZero condition), scale from zero through
// /scale and up by an update of spec.replicas, the node-to-machine-to-group
// mapping it walks, priority annotations, scale-down of chosen machines with
// trigger-deletion-by-mcm entries with times, and back to zero.
func TestClusterAutoscalerContract(t *testing.T) {
	s := setupSuite(t)
	ctx := t.Context()

	t.Run("the Deployment it looks up is the manager, available while ready", func(t *testing.T) {
		root, err := manifests.RepoRoot(".")
		require.NoError(t, err)
		objs, err := manifests.Render(root + "/deploy/overlays/autoscaler")
		require.NoError(t, err)
		var dep map[string]any
		for _, o := range manifests.OfKinds(objs, "Deployment") {
			if o.GetName() == mcmDeployment {
				dep = o.Object
				require.Equal(t, "machina-system", o.GetNamespace())
			}
		}
		require.NotNil(t, dep, "deploy/overlays/autoscaler has Deployment %s", mcmDeployment)
		// The manager watches its own namespace: the autoscaler's
		// CONTROL_NAMESPACE holds both the Deployment and the machines.
		containers, _, err := unstructured.NestedSlice(dep, "spec", "template", "spec", "containers")
		require.NoError(t, err)
		manager := containers[0].(map[string]any)
		assert.Contains(t, manager["args"], "--namespace=$(POD_NAMESPACE)")
		// Available means ready, and ready means /readyz, which includes
		// the driver's Probe: this manager process answers it.
		probe := manager["readinessProbe"].(map[string]any)["httpGet"].(map[string]any)
		assert.Equal(t, "/readyz", probe["path"])
		s.waitReady(t, s.readyURL)
	})

	t.Run("node templates: the provider's checks and the manager's condition agree", func(t *testing.T) {
		complete := autoscalerClass("ca-complete", resource.MustParse("0"), "local-a")
		require.NoError(t, s.c.Create(ctx, complete))
		partial := autoscalerClass("ca-partial", resource.Quantity{}, "")
		require.NoError(t, s.c.Create(ctx, partial))

		assert.NoError(t, providerValidateNodeTemplate(complete.NodeTemplate))
		assert.Error(t, providerValidateNodeTemplate(partial.NodeTemplate))
		s.waitClassCondition(t, complete.Name, metav1.ConditionTrue, "can scale up from zero")
		s.waitClassCondition(t, partial.Name, metav1.ConditionFalse, "nodeTemplate lacks capacity.gpu, zone")
	})

	md := &v1alpha1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: caPool},
		Spec: v1alpha1.MachineDeploymentSpec{
			Replicas: 0,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"name": caPool}},
			Template: v1alpha1.MachineTemplateSpec{
				// The provider lists a group's machines by label name=<group>.
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"name": caPool}},
				Spec:       v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Kind: "MachineClass", Name: "ca-complete"}},
			},
		},
	}
	require.NoError(t, s.c.Create(ctx, md))

	t.Run("scale from zero through /scale, up by an update of replicas", func(t *testing.T) {
		// As `kubectl scale` does: read /scale, write it back (again on a
		// conflict with the controllers' own writes).
		s.eventually(t, "scaling "+caPool+" to 2 through /scale", func(ctx context.Context) (bool, string, error) {
			scale := &autoscalingv1.Scale{}
			if err := s.c.SubResource("scale").Get(ctx, md, scale); err != nil {
				return false, "", err
			}
			if scale.Spec.Replicas != 0 {
				return false, "", fmt.Errorf("/scale says %d replicas, not the deployment's 0", scale.Spec.Replicas)
			}
			scale.Spec.Replicas = 2
			err := s.c.SubResource("scale").Update(ctx, md, client.WithSubResourceBody(scale))
			if apierrors.IsConflict(err) {
				return false, err.Error(), nil
			}
			return err == nil, "", err
		})
		s.waitPool(t, 2)

		// IncreaseSize: SetMachineDeploymentSize updates the deployment.
		s.setReplicas(t, func(d *v1alpha1.MachineDeployment) { d.Spec.Replicas = 3 })
		s.waitPool(t, 3)
	})

	t.Run("every node maps to its machine and node group as the provider walks it", func(t *testing.T) {
		machines := s.poolMachines(t)
		require.Len(t, machines, 3)
		for _, m := range machines {
			node := &corev1.Node{}
			require.NoError(t, s.c.Get(ctx, client.ObjectKey{Name: m.Labels[v1alpha1.NodeLabelKey]}, node), "label node of %s", m.Name)
			// getMachineInfo: the last segment of the provider IDs.
			assert.Equal(t, lastSegment(node.Spec.ProviderID), lastSegment(m.Spec.ProviderID), m.Name)
			// getNodeGroup: the first owner of the machine, then of its set.
			require.NotEmpty(t, m.OwnerReferences, m.Name)
			set := &v1alpha1.MachineSet{}
			require.NoError(t, s.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: m.OwnerReferences[0].Name}, set))
			require.NotEmpty(t, set.OwnerReferences)
			assert.Equal(t, caPool, set.OwnerReferences[0].Name)
			assert.Equal(t, defaultPriority, m.Annotations[v1alpha1.MachinePriorityAnnotation], "a machine the autoscaler did not choose")
		}
		// isRollingUpdateFinished: scale-down is allowed.
		got := &v1alpha1.MachineDeployment{}
		require.NoError(t, s.c.Get(ctx, client.ObjectKeyFromObject(md), got))
		cond := deploymentCondition(got, v1alpha1.MachineDeploymentProgressing)
		require.NotNil(t, cond)
		assert.Equal(t, v1alpha1.ConditionTrue, cond.Status)
		assert.Equal(t, "NewMachineSetAvailable", cond.Reason)
	})

	t.Run("a machine given priority 1 goes first on a scale-down", func(t *testing.T) {
		victim := s.poolMachines(t)[1]
		// updateAnnotationOnMachine, then SetMachineDeploymentSize.
		s.updateMachine(t, victim.Name, func(m *v1alpha1.Machine) {
			m.Annotations[v1alpha1.MachinePriorityAnnotation] = "1"
		})
		s.setReplicas(t, func(d *v1alpha1.MachineDeployment) { d.Spec.Replicas = 2 })
		s.waitPool(t, 2)
		assert.NotContains(t, machineNamesOf(s.poolMachines(t)), victim.Name)
	})

	t.Run("trigger-deletion-by-mcm with times removes exactly the machines named", func(t *testing.T) {
		machines := s.poolMachines(t)
		victim, keep := machines[0].Name, machines[1].Name
		decided := time.Now().UTC().Format(time.RFC3339)
		// scaleDownMachineDeployment: one update of the annotations and
		// the replicas.
		s.setReplicas(t, func(d *v1alpha1.MachineDeployment) {
			d.Annotations[v1alpha1.LastReplicaChangeByScalerTimeAnnotation] = decided
			d.Annotations[v1alpha1.TriggerDeletionByMCMAnnotation] = victim + "~" + decided
			d.Spec.Replicas = 1
		})
		s.waitPool(t, 1)
		assert.Equal(t, []string{keep}, machineNamesOf(s.poolMachines(t)))
		s.eventually(t, "the handled name leaves trigger-deletion-by-mcm", func(ctx context.Context) (bool, string, error) {
			got := &v1alpha1.MachineDeployment{}
			if err := s.c.Get(ctx, client.ObjectKeyFromObject(md), got); err != nil {
				return false, "", err
			}
			v, ok := got.Annotations[v1alpha1.TriggerDeletionByMCMAnnotation]
			return !ok || v == "", v, nil
		})
	})

	t.Run("back to zero, then from zero again", func(t *testing.T) {
		last := s.poolMachines(t)[0].Name
		s.setReplicas(t, func(d *v1alpha1.MachineDeployment) {
			d.Annotations[v1alpha1.TriggerDeletionByMCMAnnotation] = last + "~" + time.Now().UTC().Format(time.RFC3339)
			d.Spec.Replicas = 0
		})
		s.waitPool(t, 0)
		s.setReplicas(t, func(d *v1alpha1.MachineDeployment) { d.Spec.Replicas = 1 })
		s.waitPool(t, 1)
	})
}

// autoscalerClass is a virtualnode class with a node template: gpu and zone
// left out when zero.
func autoscalerClass(name string, gpu resource.Quantity, zone string) *v1alpha1.MachineClass {
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")}
	if !gpu.IsZero() || zone != "" {
		capacity["gpu"] = gpu
	}
	return &v1alpha1.MachineClass{
		ObjectMeta:   metav1.ObjectMeta{Namespace: namespace, Name: name},
		Provider:     "virtualnode",
		ProviderSpec: runtime.RawExtension{Raw: []byte(providerSpecs[classV1])},
		SecretRef:    &corev1.SecretReference{Namespace: namespace, Name: secretName},
		NodeTemplate: &v1alpha1.NodeTemplate{
			Capacity: capacity, InstanceType: "small", Region: "local", Zone: zone,
		},
	}
}

// providerValidateNodeTemplate is the provider's validateNodeTemplate:
// capacity cpu, memory and gpu, and instanceType, region and zone.
func providerValidateNodeTemplate(nt *v1alpha1.NodeTemplate) error {
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, "gpu"} {
		if _, ok := nt.Capacity[r]; !ok {
			return fmt.Errorf("the core resource fields cpu, memory, gpu are mandatory")
		}
	}
	if nt.Region == "" || nt.InstanceType == "" || nt.Zone == "" {
		return fmt.Errorf("InstanceType, Region and Zone attributes are mandatory")
	}
	return nil
}

// waitClassCondition waits for the class's ScaleFromZero condition.
func (s *suite) waitClassCondition(t *testing.T, name string, status metav1.ConditionStatus, message string) {
	t.Helper()
	s.eventually(t, "class "+name+" ScaleFromZero "+string(status), func(ctx context.Context) (bool, string, error) {
		class := &v1alpha1.MachineClass{}
		if err := s.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, class); err != nil {
			return false, "", err
		}
		if class.Status == nil {
			return false, "no status", nil
		}
		c := meta.FindStatusCondition(class.Status.Conditions, v1alpha1.MachineClassScaleFromZero)
		if c == nil {
			return false, "no condition", nil
		}
		return c.Status == status && strings.Contains(c.Message, message), c.Message, nil
	})
}

// poolMachines are the live machines of the node group, by name, as the
// provider lists them (label name=<group>).
func (s *suite) poolMachines(t *testing.T) []v1alpha1.Machine {
	t.Helper()
	var list v1alpha1.MachineList
	require.NoError(t, s.c.List(t.Context(), &list, client.InNamespace(namespace), client.MatchingLabels{"name": caPool}))
	var out []v1alpha1.Machine
	for _, m := range list.Items {
		if m.DeletionTimestamp.IsZero() {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b v1alpha1.Machine) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// waitPool waits until the node group has n machines, all Running with a
// Ready Node, and no machine or Node of it is left being deleted.
func (s *suite) waitPool(t *testing.T, n int) {
	t.Helper()
	s.eventually(t, fmt.Sprintf("node group %s at %d running machines with ready nodes", caPool, n), func(ctx context.Context) (bool, string, error) {
		var list v1alpha1.MachineList
		if err := s.c.List(ctx, &list, client.InNamespace(namespace), client.MatchingLabels{"name": caPool}); err != nil {
			return false, "", err
		}
		ready := 0
		for _, m := range list.Items {
			node := &corev1.Node{}
			if m.Status.CurrentStatus.Phase == v1alpha1.MachineRunning && m.DeletionTimestamp.IsZero() &&
				s.c.Get(ctx, client.ObjectKey{Name: m.Labels[v1alpha1.NodeLabelKey]}, node) == nil && nodeReady(node) {
				ready++
			}
		}
		return len(list.Items) == n && ready == n, fmt.Sprintf("%d machines, %d running with a ready node", len(list.Items), ready), nil
	})
}

// setReplicas updates the node group's deployment as the provider does: a
// read, a change, an Update (retried on a conflict).
func (s *suite) setReplicas(t *testing.T, change func(*v1alpha1.MachineDeployment)) {
	t.Helper()
	s.eventually(t, "updating MachineDeployment "+caPool, func(ctx context.Context) (bool, string, error) {
		d := &v1alpha1.MachineDeployment{}
		if err := s.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: caPool}, d); err != nil {
			return false, "", err
		}
		if d.Annotations == nil {
			d.Annotations = map[string]string{}
		}
		change(d)
		err := s.c.Update(ctx, d)
		return err == nil, fmt.Sprint(err), nil
	})
}

// updateMachine updates a machine as the provider's
// updateAnnotationOnMachine does.
func (s *suite) updateMachine(t *testing.T, name string, change func(*v1alpha1.Machine)) {
	t.Helper()
	s.eventually(t, "updating Machine "+name, func(ctx context.Context) (bool, string, error) {
		m := &v1alpha1.Machine{}
		if err := s.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, m); err != nil {
			return false, "", err
		}
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		change(m)
		err := s.c.Update(ctx, m)
		return err == nil, fmt.Sprint(err), nil
	})
}

func machineNamesOf(machines []v1alpha1.Machine) []string {
	out := make([]string, 0, len(machines))
	for _, m := range machines {
		out = append(out, m.Name)
	}
	return out
}

func lastSegment(providerID string) string {
	parts := strings.Split(providerID, "/")
	return parts[len(parts)-1]
}
