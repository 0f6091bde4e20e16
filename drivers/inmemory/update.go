package inmemory

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
	"github.com/machina-io/machina/sdk"
)

// tagLikeKeys are the provider spec keys a running VM can take without being
// replaced, as a cloud applies tags or labels to a running instance. Any
// other difference (capacity, bootDelay, an image, a machine type) needs a
// new VM.
var tagLikeKeys = []string{"labels", "tags"}

// UpdateMachine applies a changed class to the VM of a machine when only
// tag-like keys of the provider spec differ, and answers "needs a new VM",
// changing nothing, otherwise. The VM's own provider spec is what the new
// class is compared with: it is the truth, whatever old_machine_class says.
// A VM that already matches is answered applied (idempotency).
func (d *Driver) UpdateMachine(ctx context.Context, req *driverv1alpha1.UpdateMachineRequest) (*driverv1alpha1.UpdateMachineResponse, error) {
	if err := d.unlessDisabled(driverv1alpha1.Capability_TYPE_UPDATE_MACHINE, MethodUpdateMachine); err != nil {
		return nil, err
	}
	var resp *driverv1alpha1.UpdateMachineResponse
	err := d.serve(ctx, MethodUpdateMachine, req.GetMachine().GetName(), func() (err error) {
		resp, err = d.updateMachine(req)
		return err
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

func (d *Driver) updateMachine(req *driverv1alpha1.UpdateMachineRequest) (*driverv1alpha1.UpdateMachineResponse, error) {
	m := req.GetMachine()
	if err := checkMachineAndClass(m, req.GetMachineClass()); err != nil {
		return nil, err
	}
	if err := checkClass(req.GetOldMachineClass(), "old_machine_class"); err != nil {
		return nil, err
	}
	if m.GetProviderId() == "" {
		return nil, invalid("machine.provider_id is required")
	}
	if _, err := parseProviderSpec(req.GetOldMachineClass().GetProviderSpec()); err != nil {
		return nil, invalid("old_machine_class.provider_spec is not a valid provider spec of this driver")
	}
	spec, err := parseProviderSpec(req.GetMachineClass().GetProviderSpec())
	if err != nil {
		return nil, err
	}
	if err := checkSecrets(req.GetSecrets(), nil); err != nil {
		return nil, err
	}

	d.mu.Lock()
	defer d.mu.Unlock()
	vm, ok := d.lookupLocked(m)
	if !ok {
		return nil, notFound(m)
	}
	differ, err := differingKeys(vm.ProviderSpec, spec.canonical)
	if err != nil {
		return nil, err
	}
	if fixed := slices.DeleteFunc(slices.Clone(differ), func(k string) bool { return slices.Contains(tagLikeKeys, k) }); len(fixed) > 0 {
		return sdk.NeedsNewVM(fmt.Sprintf("provider spec keys %s differ and cannot change on a running VM (only %s can)",
			strings.Join(fixed, ", "), strings.Join(tagLikeKeys, " and "))), nil
	}
	if len(differ) > 0 {
		vm.ProviderSpec = spec.canonical
		vm.Updates++
		vm.Updated = time.Now().UTC()
		d.log.Info("updated VM", "machine", vm.Namespace+"/"+vm.Name, "providerID", vm.ProviderID, "keys", differ)
		if err := d.saveLocked(); err != nil {
			return nil, err
		}
	}
	return sdk.Applied(&driverv1alpha1.GetMachineStatusResponse{
		ProviderId:          vm.ProviderID,
		NodeName:            vm.NodeName,
		Addresses:           addresses(vm),
		NeedsInitialization: vm.NeedsInitialization,
	}, vm.LastKnownState), nil
}

// differingKeys returns, sorted, the top-level keys whose values differ
// between two canonical provider specs (a key present in one only differs).
func differingKeys(a, b []byte) ([]string, error) {
	var ma, mb map[string]json.RawMessage
	if err := json.Unmarshal(a, &ma); err != nil {
		return nil, sdk.Internal("the VM's provider spec cannot be read")
	}
	if err := json.Unmarshal(b, &mb); err != nil {
		return nil, invalid("machine_class.provider_spec must be a JSON object")
	}
	var keys []string
	for _, k := range slices.Sorted(maps.Keys(ma)) {
		if v, ok := mb[k]; !ok || string(v) != string(ma[k]) {
			keys = append(keys, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(mb)) {
		if _, ok := ma[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys, nil
}
