package overshoot

import (
	"math"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// FuzzComputeThresholds computes the freeze thresholds for any set size,
// deployment size, maxSurge and --safety-up/--safety-down (validated to
// 0..2^31-1): either the deployment's maxSurge is refused, or the higher
// threshold is at least the machines the deployment may have (replicas +
// surge, or 2*replicas for a set of its own) up to the int32 limit, and
// never wraps around to a value a normal set reaches at once.
func FuzzComputeThresholds(f *testing.F) {
	f.Add(int32(3), true, int32(3), false, int32(2), "", int32(0), int32(0))
	f.Add(int32(3), true, int32(3), true, int32(0), "71582788300%", int32(1), int32(1))
	f.Add(int32(1500000000), false, int32(0), false, int32(0), "", int32(1000000000), int32(0))
	f.Add(int32(3), true, int32(2147483647), false, int32(2147483647), "", int32(2147483647), int32(2147483647))
	f.Add(int32(3), true, int32(3), false, int32(-1), "", int32(0), int32(0))
	f.Fuzz(func(t *testing.T, setReplicas int32, hasDeployment bool, mdReplicas int32, surgeIsString bool, surgeN int32, surgeS string, up, down int32) {
		if setReplicas < 0 || mdReplicas < 0 || up < 0 || down < 0 {
			return // the CRD and the flag validation refuse these
		}
		ms := &v1alpha1.MachineSet{Spec: v1alpha1.MachineSetSpec{Replicas: setReplicas}}
		var md *v1alpha1.MachineDeployment
		want := 2 * int64(setReplicas)
		if hasDeployment {
			surge := intstr.FromInt32(surgeN)
			if surgeIsString {
				surge = intstr.FromString(surgeS)
			}
			md = &v1alpha1.MachineDeployment{ObjectMeta: metav1.ObjectMeta{Name: "d"}}
			md.Spec.Replicas = mdReplicas
			md.Spec.Strategy.RollingUpdate = &v1alpha1.RollingUpdateMachineDeployment{UpdateConfiguration: v1alpha1.UpdateConfiguration{MaxSurge: &surge}}
			want = int64(mdReplicas)
		}
		th, err := ComputeThresholds(ms, md, up, down)
		if err != nil {
			return
		}
		if int64(th.Higher) < min(want+int64(up), math.MaxInt32) {
			t.Fatalf("higher threshold %d below %d machines + safety-up %d", th.Higher, want, up)
		}
		if th.Lower > th.Higher {
			t.Fatalf("lower %d above higher %d", th.Lower, th.Higher)
		}
	})
}
