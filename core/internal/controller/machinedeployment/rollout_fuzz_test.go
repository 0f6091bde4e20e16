package machinedeployment

import (
	"math"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// fuzzIntOrString builds a maxSurge or maxUnavailable: the number n, or the
// string s (a percentage or anything else the CRD lets through).
func fuzzIntOrString(isString bool, n int32, s string) intstr.IntOrString {
	if isString {
		return intstr.FromString(s)
	}
	return intstr.FromInt32(n)
}

// FuzzResolveBounds checks the rollout bounds for any maxSurge,
// maxUnavailable and replicas the API server accepts: either they are
// refused (and so is the strategy), or surge and unavailable are in range,
// replicas+maxSurge fits an int32, the minimum available is between 0 and
// replicas, and small values agree with Kubernetes' own rounding.
func FuzzResolveBounds(f *testing.F) {
	f.Add(false, int32(1), "", false, int32(0), "", int32(3))
	f.Add(true, int32(0), "25%", true, int32(0), "25%", int32(10))
	f.Add(true, int32(0), "71582788300%", false, int32(0), "", int32(3))
	f.Add(false, int32(1), "", true, int32(0), "100000000000%", int32(3))
	f.Add(false, int32(math.MaxInt32), "", false, int32(0), "", int32(3))
	f.Add(false, int32(-1), "", false, int32(0), "", int32(3))
	f.Add(true, int32(0), "+5%", true, int32(0), "-5%", int32(3))
	f.Add(true, int32(0), "99999999999999999999999%", true, int32(0), "101%", int32(0))
	f.Add(true, int32(0), "5", true, int32(0), " 5%", int32(math.MaxInt32))
	f.Fuzz(func(t *testing.T, surgeIsString bool, surgeN int32, surgeS string, unIsString bool, unN int32, unS string, replicas int32) {
		surge := fuzzIntOrString(surgeIsString, surgeN, surgeS)
		unavailable := fuzzIntOrString(unIsString, unN, unS)
		d := rollingDeployment(replicas, &surge, &unavailable)
		s, u, err := resolveBounds(surge, unavailable, replicas)
		if vErr := validateStrategy(d); (vErr == nil) != (err == nil) {
			t.Fatalf("validateStrategy %v but resolveBounds %v", vErr, err)
		}
		if err != nil {
			return
		}
		if replicas < 0 || s < 0 || u < 0 {
			t.Fatalf("replicas %d: surge %d, unavailable %d", replicas, s, u)
		}
		if int64(replicas)+int64(s) > math.MaxInt32 {
			t.Fatalf("replicas %d + surge %d overflows", replicas, s)
		}
		if s == 0 && u == 0 {
			t.Fatalf("surge and unavailable both 0: no rollout could progress")
		}
		if unavailable.Type == intstr.String && u > max(replicas, 1) {
			t.Fatalf("unavailable %d above replicas %d from a percentage %q", u, replicas, unS)
		}
		// The helpers the rollout uses stay in range.
		if ms, mu := maxSurge(d), maxUnavailable(d); ms != s || mu < 0 || mu > replicas || replicas-mu < 0 {
			t.Fatalf("maxSurge %d (want %d), maxUnavailable %d of %d replicas", ms, s, mu, replicas)
		}
		// Where float arithmetic is exact, Kubernetes' rounding agrees.
		if replicas <= 1<<20 && len(surgeS) < 8 && len(unS) < 8 {
			ks, kerr := intstr.GetScaledValueFromIntOrPercent(&surge, int(replicas), true)
			ku, _ := intstr.GetScaledValueFromIntOrPercent(&unavailable, int(replicas), false)
			if kerr == nil && ks == int(s) && (ku == int(u) || (ks == 0 && ku == 0 && u == 1)) {
				return
			}
			t.Fatalf("surge %v unavailable %v of %d: got %d/%d, Kubernetes %d/%d (%v)", surge, unavailable, replicas, s, u, ks, ku, kerr)
		}
	})
}

// FuzzRolloutArithmetic drives the scaling arithmetic of a rollout
// (newMachineSetReplicas, proportionalSizes) with any valid deployment and
// up to three machine sets in a state the controller can reach (counts that
// add up to at most 2^31-1, any text in the max-replicas annotation, which
// users can edit). No size may be negative or wrap around, the new set never
// grows beyond replicas, and proportional scaling never grows a set when the
// deployment shrinks, never shrinks one when it grows, and never takes the
// total beyond the larger of what the sets have and replicas+maxSurge.
func FuzzRolloutArithmetic(f *testing.F) {
	f.Add(int32(15), int32(3), int32(2), int32(8), int32(8), "13", int32(5), int32(5), "13", int32(0), int32(0), "")
	f.Add(int32(5), int32(3), int32(2), int32(8), int32(9), "13", int32(5), int32(5), "13", int32(1), int32(0), "x")
	f.Add(int32(0), int32(1), int32(0), int32(4), int32(4), "8", int32(3), int32(3), "8", int32(0), int32(0), "")
	f.Add(int32(2000000000), int32(1), int32(0), int32(1000000000), int32(0), "1", int32(1000000000), int32(0), "1", int32(5), int32(0), "")
	f.Add(int32(1), int32(0), int32(1), int32(2147483646), int32(0), "2147483647", int32(1), int32(1), "", int32(0), int32(0), "0")
	f.Fuzz(func(t *testing.T, replicas, surgeN, unN int32,
		r1, st1 int32, ann1 string, r2, st2 int32, ann2 string, r3, st3 int32, ann3 string) {
		surge, unavailable := intstr.FromInt32(surgeN), intstr.FromInt32(unN)
		d := rollingDeployment(replicas, &surge, &unavailable)
		if validateStrategy(d) != nil {
			return
		}
		var sets []*v1alpha1.MachineSet
		var machines int64
		for i, in := range []struct {
			r, st int32
			ann   string
		}{{r1, st1, ann1}, {r2, st2, ann2}, {r3, st3, ann3}} {
			if in.r < 0 || in.st < 0 {
				return // the CRD's minimum is 0
			}
			ms := set("s"+strconv.Itoa(i), in.r, t0.Add(time.Duration(i)*time.Minute), map[string]string{v1alpha1.MaxReplicasAnnotation: in.ann})
			ms.Status.Replicas = in.st
			machines += int64(max(in.r, in.st))
			sets = append(sets, ms)
		}
		if machines > math.MaxInt32 {
			return // more machines than a deployment can ever have
		}
		newMS := sets[len(sets)-1]
		n := newMachineSetReplicas(d, sets, newMS)
		if n < 0 || n > max(newMS.Spec.Replicas, replicas) {
			t.Fatalf("new set of %d may grow to %d (replicas %d, surge %d)", newMS.Spec.Replicas, n, replicas, surgeN)
		}

		before := int64(sumReplicas(active(sets)))
		allowed := int64(0)
		if replicas > 0 {
			allowed = int64(replicas) + int64(maxSurge(d))
		}
		sizes := proportionalSizes(d, sets)
		var total int64
		for _, ms := range active(sets) {
			size, ok := sizes[ms.Name]
			if !ok {
				t.Fatalf("no size for active set %s", ms.Name)
			}
			if size < 0 {
				t.Fatalf("set %s of %d gets a negative size %d", ms.Name, ms.Spec.Replicas, size)
			}
			if allowed > before && size < ms.Spec.Replicas || allowed < before && size > ms.Spec.Replicas {
				t.Fatalf("total %d -> %d, but set %s goes %d -> %d (sizes %v)", before, allowed, ms.Name, ms.Spec.Replicas, size, sizes)
			}
			total += int64(size)
		}
		if total > max(before, allowed) {
			t.Fatalf("sizes %v add up to %d, above both %d and %d", sizes, total, before, allowed)
		}
	})
}

// FuzzParseTriggerDeletion reads any annotation value: no panic, every entry
// names a machine once, with an RFC 3339 time.
func FuzzParseTriggerDeletion(f *testing.F) {
	for _, s := range []string{"m1~2026-01-01T10:00:00Z,m2~2026-01-01T10:00:00Z", "m1,m2", "m1, m1", "~2026-01-01T10:00:00Z",
		"m1~yesterday", ",,,", "m1~2026-01-01T10:00:00+02:00~x", "m\u00a0~2026-01-01T10:00:00Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, value string) {
		seen := map[string]bool{}
		for _, e := range parseTriggerDeletion(value, t0) {
			if e.name == "" || seen[e.name] {
				t.Fatalf("entry %+v: empty or repeated name in %q", e, value)
			}
			seen[e.name] = true
			if _, err := time.Parse(time.RFC3339, e.at); err != nil {
				t.Fatalf("entry %+v: time does not parse: %v", e, err)
			}
		}
	})
}
