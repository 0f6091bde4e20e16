package machineclass

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// The checks of the cluster-autoscaler's mcm provider (validateNodeTemplate):
// capacity cpu, memory and gpu, instanceType, region and zone.
func TestNodeTemplateProblems(t *testing.T) {
	q := resource.MustParse
	complete := func() *v1alpha1.NodeTemplate {
		return &v1alpha1.NodeTemplate{
			Capacity:     corev1.ResourceList{"cpu": q("2"), "memory": q("4Gi"), "gpu": q("0")},
			InstanceType: "small", Region: "r", Zone: "r-a",
		}
	}
	assert.Empty(t, nodeTemplateProblems(complete()))

	nt := complete()
	delete(nt.Capacity, "gpu")
	nt.Region = " "
	assert.Equal(t, []string{"lacks capacity.gpu, region"}, nodeTemplateProblems(nt))

	nt = complete()
	nt.Capacity["memory"] = q("-1Gi")
	nt.InstanceType = ""
	assert.Equal(t, []string{"lacks instanceType", "capacity.memory is negative (-1Gi)"}, nodeTemplateProblems(nt))

	assert.Equal(t, []string{"lacks capacity.cpu, capacity.memory, capacity.gpu, instanceType, region, zone"},
		nodeTemplateProblems(&v1alpha1.NodeTemplate{}))
}
