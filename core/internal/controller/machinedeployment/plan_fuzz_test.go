package machinedeployment

import (
	"testing"
	"time"
)

// FuzzPlanRolling plans rolling-update steps for any deployment of up to
// two old sets and checks what the golden plans cannot enumerate: every
// step starts where the set is and never goes below zero, the new set
// grows only within replicas+maxSurge machines and never beyond replicas,
// the plan never takes availability below replicas-maxUnavailable by
// itself (or lower than it already is), and never deletes more available
// old machines than the budget allows.
func FuzzPlanRolling(f *testing.F) {
	f.Add(int32(3), int32(1), int32(0), int32(1), int32(1), int32(0), int32(3), int32(3), int32(3), int32(0), int32(0), int32(0), false, int32(0))
	f.Add(int32(4), int32(1), int32(1), int32(1), int32(1), int32(0), int32(2), int32(2), int32(1), int32(2), int32(2), int32(0), true, int32(1))
	f.Add(int32(6), int32(0), int32(4), int32(1), int32(1), int32(1), int32(3), int32(3), int32(3), int32(2), int32(2), int32(2), false, int32(0))
	f.Fuzz(func(t *testing.T, replicas, surge, unavailable int32,
		nr, ns, na, ar, as, aa, br, bs, ba int32, limited bool, room int32) {
		for _, v := range []int32{replicas, surge, unavailable, nr, ns, na, ar, as, aa, br, bs, ba, room} {
			if v < 0 || v > 1000 {
				return // counts the API allows, small enough not to overflow
			}
		}
		snap := rolloutSnapshot{
			Replicas: replicas, MaxSurge: surge, MaxUnavailable: min(unavailable, replicas),
			New: &setSnapshot{Name: "new", Created: t0.Add(time.Hour), Replicas: nr, StatusReplicas: ns, Available: na},
			Old: []setSnapshot{
				{Name: "b", Created: t0.Add(time.Minute), Replicas: br, StatusReplicas: bs, Available: ba},
				{Name: "a", Created: t0, Replicas: ar, StatusReplicas: as, Available: aa},
			},
		}
		budget := budgetRoom{Limited: limited, Room: room}
		p := planWithBudget(snap, planRolling, func() budgetRoom { return budget })

		sets := map[string]*setSnapshot{"new": snap.New}
		for i := range snap.Old {
			sets[snap.Old[i].Name] = &snap.Old[i]
		}
		before := map[string]setSnapshot{}
		for name, ms := range sets {
			before[name] = *ms
		}
		availBefore := sumSnapAvailable(sets)
		var availableDeleted int32
		for _, st := range p.Steps {
			ms := sets[st.Set]
			if ms == nil || st.From != ms.Replicas || st.To < 0 {
				t.Fatalf("step %+v on %+v (plan %+v)", st, ms, p)
			}
			if st.Set == "new" && st.To > st.From {
				if st.To > replicas {
					t.Fatalf("new set grows beyond replicas: %+v", st)
				}
				var machines int32
				for name, m := range before {
					if name != "new" {
						machines += m.machines()
					}
				}
				if machines+max(st.To, ms.StatusReplicas) > replicas+surge {
					t.Fatalf("new set grows beyond replicas+maxSurge: %+v (plan %+v)", st, p)
				}
			}
			if st.Reason == reasonOldAvailable {
				availableDeleted += ms.available() - min(ms.Available, st.To)
			}
			ms.Replicas = st.To
		}
		if after, floor := sumSnapAvailable(sets), min(availBefore, replicas-min(unavailable, replicas)); after < floor {
			t.Fatalf("available %d -> %d, below %d (plan %+v)", availBefore, after, floor, p)
		}
		if limited && availableDeleted > max(room, 0) {
			t.Fatalf("%d available old machines deleted, budget room %d (plan %+v)", availableDeleted, room, p)
		}
	})
}

func sumSnapAvailable(sets map[string]*setSnapshot) (n int32) {
	for _, ms := range sets {
		n += ms.available()
	}
	return n
}
