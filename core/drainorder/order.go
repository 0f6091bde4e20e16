package drainorder

import (
	"context"
	"io"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	kubedrain "k8s.io/kubectl/pkg/drain"

	machinaio "github.com/machina-io/machina/core/api/machina/v1alpha1"
)

// Filters returns kubectl's drain helper configured with the pod filters
// machina drains with, for its GetPodsForDeletion; its blocking RunNodeDrain
// is never used.
func Filters(ctx context.Context, client kubernetes.Interface) *kubedrain.Helper {
	return &kubedrain.Helper{
		Ctx:    ctx,
		Client: client,
		// Pods that declare no controller are removed too: the machine is
		// going away and they would die with it.
		Force: true,
		// DaemonSet pods stay; the DaemonSet controller would recreate them
		// on the cordoned Node anyway.
		IgnoreAllDaemonSets: true,
		// Local storage (emptyDir) dies with the VM; do not let it block.
		DeleteEmptyDirData: true,
		// A negative value keeps each pod's own terminationGracePeriodSeconds.
		GracePeriodSeconds: -1,
		ChunkSize:          500,
		Out:                io.Discard,
		ErrOut:             io.Discard,
		AdditionalFilters:  []kubedrain.PodFilter{skipLabelled},
	}
}

// DrainLabel is Cluster API's label on a pod: the value "skip" leaves the
// pod on the Node during a drain (it goes with the machine).
const DrainLabel = "cluster.x-k8s.io/drain"

// DrainSkip is the DrainLabel value that leaves a pod alone.
const DrainSkip = "skip"

// skipLabelled leaves the pods labelled machina.io/drain=skip or
// cluster.x-k8s.io/drain=skip alone (labelDecision).
func skipLabelled(p corev1.Pod) kubedrain.PodDeleteStatus {
	if d, ok := labelDecision(&p); ok && d.Behavior == machinaio.DrainBehaviorSkip {
		return kubedrain.MakePodDeleteStatusSkip()
	}
	return kubedrain.MakePodDeleteStatusOkay()
}

// Critical tells whether the pod runs at one of Kubernetes' two system
// priority classes. Critical pods leave the Node after every other pod of
// their drain order is gone (Karpenter's order, Stages): the cluster's DNS or a CNI's controller
// keeps serving the pods that are still moving.
func Critical(p *corev1.Pod) bool {
	switch p.Spec.PriorityClassName {
	case "system-cluster-critical", "system-node-critical":
		return true
	}
	return false
}

// Serial tells whether the pod mounts a PersistentVolumeClaim: such pods are
// drained one at a time, each followed by the detach of its volumes, so that
// a volume is free to attach on its next node before the next pod's volumes
// are moved (MCM's serial drain of pods with volumes).
func Serial(p *corev1.Pod) bool {
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			return true
		}
	}
	return false
}

// SortSerial orders the serial pods for their one-at-a-time eviction: higher
// spec.priority first, as MCM does (the most important workloads move
// first, while the rest of the drain is still running), then by
// "namespace/name" for a stable order across passes.
func SortSerial(pods []corev1.Pod) {
	slices.SortStableFunc(pods, func(a, b corev1.Pod) int {
		if pa, pb := priority(&a), priority(&b); pa != pb {
			if pa > pb {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
}

func priority(p *corev1.Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return 0
}
