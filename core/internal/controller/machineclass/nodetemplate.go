package machineclass

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// scaleFromZeroCapacity are the capacities the cluster-autoscaler's mcm
// provider requires of a node template (its coreResourceNames), as MCM's
// machine controller does: "gpu" is MCM's own name, "0" for none.
var scaleFromZeroCapacity = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, "gpu"}

// nodeTemplateProblems lists what keeps the autoscaler from building a node
// of this template: each missing capacity or field by its path, and
// negative capacities. Nil means complete.
func nodeTemplateProblems(nt *v1alpha1.NodeTemplate) []string {
	var missing, negative []string
	for _, r := range scaleFromZeroCapacity {
		q, ok := nt.Capacity[r]
		switch {
		case !ok:
			missing = append(missing, "capacity."+string(r))
		case q.Sign() < 0:
			negative = append(negative, fmt.Sprintf("capacity.%s is negative (%s)", r, q.String()))
		}
	}
	for _, f := range []struct{ name, value string }{
		{"instanceType", nt.InstanceType}, {"region", nt.Region}, {"zone", nt.Zone},
	} {
		if strings.TrimSpace(f.value) == "" {
			missing = append(missing, f.name)
		}
	}
	var out []string
	if len(missing) > 0 {
		out = append(out, "lacks "+strings.Join(missing, ", "))
	}
	return append(out, negative...)
}

// scaleFromZeroCondition is the class's ScaleFromZero condition.
func scaleFromZeroCondition(class *v1alpha1.MachineClass) metav1.Condition {
	cond := metav1.Condition{Type: v1alpha1.MachineClassScaleFromZero, ObservedGeneration: class.Generation}
	switch problems := []string(nil); {
	case class.NodeTemplate == nil:
		cond.Status = metav1.ConditionFalse
		cond.Reason = v1alpha1.MachineClassNoNodeTemplate
		cond.Message = "No nodeTemplate: the cluster-autoscaler can scale this class's deployments down to zero but not up from zero; " +
			"give it capacity cpu, memory and gpu, instanceType, region and zone"
	default:
		if problems = nodeTemplateProblems(class.NodeTemplate); len(problems) == 0 {
			cond.Status = metav1.ConditionTrue
			cond.Reason = v1alpha1.MachineClassNodeTemplateComplete
			cond.Message = "nodeTemplate has capacity cpu, memory and gpu, instanceType, region and zone: the cluster-autoscaler can scale up from zero"
			break
		}
		cond.Status = metav1.ConditionFalse
		cond.Reason = v1alpha1.MachineClassNodeTemplateIncomplete
		cond.Message = "nodeTemplate " + strings.Join(problems, "; ") +
			`: the cluster-autoscaler cannot scale this class's deployments up from zero (it requires capacity cpu, memory and gpu, "0" for none, and instanceType, region and zone)`
	}
	return cond
}

// setNodeTemplateCondition sets the class's ScaleFromZero condition and
// returns what to announce once it is written: a Warning event when the
// node template turns incomplete (or lacks something else) and a Normal one
// when it turns complete; nil when the condition did not change. A class
// without a node template gets the condition but no event: that is a
// choice.
func setNodeTemplateCondition(ctx context.Context, rec events.EventRecorder, class *v1alpha1.MachineClass) func() {
	cond := scaleFromZeroCondition(class)
	var old *metav1.Condition
	if class.Status != nil {
		if c := meta.FindStatusCondition(class.Status.Conditions, cond.Type); c != nil {
			prev := *c
			old = &prev
		}
	}
	if old != nil && old.Status == cond.Status && old.Reason == cond.Reason && old.Message == cond.Message && old.ObservedGeneration == cond.ObservedGeneration {
		return nil
	}
	if class.Status == nil {
		class.Status = &v1alpha1.MachineClassStatus{}
	}
	meta.SetStatusCondition(&class.Status.Conditions, cond)
	return func() {
		switch {
		case cond.Reason == v1alpha1.MachineClassNodeTemplateIncomplete && (old == nil || old.Message != cond.Message):
			ctrl.LoggerFrom(ctx).Info("The machine class's nodeTemplate does not allow scaling up from zero", "reason", cond.Message)
			rec.Eventf(class, nil, corev1.EventTypeWarning, v1alpha1.MachineClassNodeTemplateIncomplete, "Validate", "%s", cond.Message)
		case cond.Status == metav1.ConditionTrue && old != nil && old.Status != cond.Status:
			rec.Eventf(class, nil, corev1.EventTypeNormal, v1alpha1.MachineClassNodeTemplateComplete, "Validate", "%s", cond.Message)
		}
	}
}
