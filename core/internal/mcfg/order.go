package mcfg

import (
	"sort"

	mcfgv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
)

// SortFragments puts fragments in merge order: the worker role's first,
// sorted by name, then all others sorted by name, so a custom pool's own
// fragments override the worker ones it also selects. Creation order,
// list order and the cache play no part: the same set of fragments always
// renders the same.
func SortFragments(fragments []mcfgv1.MachineConfig) {
	sort.SliceStable(fragments, func(i, j int) bool {
		wi := fragments[i].Labels[mcfgv1.RoleLabel] == mcfgv1.WorkerRole
		wj := fragments[j].Labels[mcfgv1.RoleLabel] == mcfgv1.WorkerRole
		if wi != wj {
			return wi
		}
		return fragments[i].Name < fragments[j].Name
	})
}
