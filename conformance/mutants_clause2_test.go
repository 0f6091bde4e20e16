package conformance_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// vmOf returns the live VM with the provider ID, or nil. It takes d.mu.
func (d *refDriver) vmOf(providerID string) *refVM {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, v := range d.vms {
		if v.providerID == providerID && !v.deleted {
			return v
		}
	}
	return nil
}

// withVM runs f on the live VM with the provider ID under d.mu.
func (d *refDriver) withVM(providerID string, f func(v *refVM)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, v := range d.vms {
		if v.providerID == providerID && !v.deleted {
			f(v)
		}
	}
}

// appliedUpdate calls next and runs f on the VM of an update answered
// applied.
func appliedUpdate(f func(d *refDriver, v *refVM, resp *driverv1alpha1.UpdateMachineResponse)) hookFunc {
	return onRPC("UpdateMachine", func(d *refDriver, _ context.Context, req any, next func() (any, error)) (any, error) {
		resp, err := next()
		if r, ok := resp.(*driverv1alpha1.UpdateMachineResponse); ok && err == nil && r.GetApplied() != nil {
			id := req.(*driverv1alpha1.UpdateMachineRequest).GetMachine().GetProviderId()
			d.withVM(id, func(v *refVM) { f(d, v, r) })
		}
		return resp, err
	})
}

// refusedUpdate calls next and runs f on an answer needs_new_vm.
func refusedUpdate(f func(req *driverv1alpha1.UpdateMachineRequest, n *driverv1alpha1.NeedsNewVM, call int)) hookFunc {
	st := &hookState{}
	return onRPC("UpdateMachine", func(_ *refDriver, _ context.Context, req any, next func() (any, error)) (any, error) {
		resp, err := next()
		if r, ok := resp.(*driverv1alpha1.UpdateMachineResponse); ok && err == nil && r.GetNeedsNewVm() != nil {
			u := req.(*driverv1alpha1.UpdateMachineRequest)
			f(u, r.GetNeedsNewVm(), st.count(u.GetMachine().GetProviderId()))
		}
		return resp, err
	})
}

// updateMutants break UpdateMachine clause by clause (§6.7).
func updateMutants() []mutant {
	var out []mutant
	add := func(name, id, test, want string, h hookFunc) {
		out = append(out, mutant{name: name, id: id, m: mutation{hook: h}, test: test, want: want})
	}
	add("update applies the in-place part of a change it refuses", "R-6.7.3-no-partial-change", "UpdateMachine/no_partial_change", "after UpdateMachine answered needs_new_vm for a change with a part it could apply",
		onRPC("UpdateMachine", func(d *refDriver, _ context.Context, req any, next func() (any, error)) (any, error) {
			u := req.(*driverv1alpha1.UpdateMachineRequest)
			resp, err := next()
			if r, ok := resp.(*driverv1alpha1.UpdateMachineResponse); ok && err == nil && r.GetNeedsNewVm() != nil {
				var spec map[string]json.RawMessage
				if json.Unmarshal(u.GetMachineClass().GetProviderSpec(), &spec) == nil && spec["labels"] != nil {
					d.withVM(u.GetMachine().GetProviderId(), func(v *refVM) {
						var cur map[string]json.RawMessage
						_ = json.Unmarshal(v.spec, &cur)
						cur["labels"] = spec["labels"]
						v.spec, _ = json.Marshal(cur)
					})
				}
			}
			return resp, err
		}))
	add("update applies what it can and answers applied", "R-6.7.3-no-partial-change", "UpdateMachine/no_partial_change", "want needs_new_vm",
		onRPC("UpdateMachine", func(d *refDriver, _ context.Context, req any, next func() (any, error)) (any, error) {
			u := req.(*driverv1alpha1.UpdateMachineRequest)
			var spec map[string]json.RawMessage
			if json.Unmarshal(u.GetMachineClass().GetProviderSpec(), &spec) == nil && spec["labels"] != nil {
				return &driverv1alpha1.UpdateMachineResponse{Result: &driverv1alpha1.UpdateMachineResponse_Applied{Applied: &driverv1alpha1.GetMachineStatusResponse{
					ProviderId: u.GetMachine().GetProviderId(), NodeName: u.GetMachine().GetName()}}}, nil
			}
			return next()
		}))
	add("update of a deleted VM's ID updates the name's new VM", "R-6.7.3-only-that-provider-id", "UpdateMachine/deleted_vm_id", "of its deleted VM",
		onRPC("UpdateMachine", func(d *refDriver, _ context.Context, req any, next func() (any, error)) (any, error) {
			u := req.(*driverv1alpha1.UpdateMachineRequest)
			d.mu.Lock()
			wasDeleted := false
			for _, v := range d.vms {
				if v.providerID == u.GetMachine().GetProviderId() && v.deleted {
					wasDeleted = true
				}
			}
			d.mu.Unlock()
			if live := d.liveOf(u.GetMachine().GetName()); wasDeleted && len(live) > 0 {
				u.Machine.ProviderId = live[0] // the name's VM, found by name
			}
			return next()
		}))
	add("updated VM no longer listed", "R-6.7.3-applied-matches-new-class#list", "UpdateMachine/applies_in_place", "does not list it with provider ID",
		appliedUpdate(func(_ *refDriver, v *refVM, _ *driverv1alpha1.UpdateMachineResponse) { v.class += "-updated" }))
	add("updated VM not found by name", "R-6.7.3-applied-matches-new-class#status", "UpdateMachine/applies_in_place", "by name alone after UpdateMachine answered applied",
		func() hookFunc {
			updated := &hookState{seen: map[string]bool{}}
			return func(d *refDriver, ctx context.Context, rpc string, req any, next func() (any, error)) (any, error) {
				m := machineOf(req)
				switch rpc {
				case "UpdateMachine":
					resp, err := next()
					if r, ok := resp.(*driverv1alpha1.UpdateMachineResponse); ok && err == nil && r.GetApplied() != nil {
						updated.mu.Lock()
						updated.seen[m.GetName()] = true
						updated.mu.Unlock()
					}
					return resp, err
				case "GetMachineStatus":
					updated.mu.Lock()
					gone := updated.seen[m.GetName()] && m.GetProviderId() == ""
					updated.mu.Unlock()
					if gone {
						return nil, status.Errorf(codes.NotFound, "machine %s has no VM", m.GetName())
					}
				}
				return next()
			}
		}())
	add("update undoes the initialization", "R-6.7.3-no-disruption", "UpdateMachine/applies_in_place", "needs_initialization=true",
		appliedUpdate(func(_ *refDriver, v *refVM, _ *driverv1alpha1.UpdateMachineResponse) { v.initialized = false }))
	add("update answers a reason over 1024 bytes", "R-6.7.2-reason-set#bound", "UpdateMachine/needs_new_vm", "with a reason of 1025 bytes",
		refusedUpdate(func(_ *driverv1alpha1.UpdateMachineRequest, n *driverv1alpha1.NeedsNewVM, _ int) {
			n.Reason = strings.Repeat("r", 1025)
		}))
	add("update answers no reason on a repeat", "R-6.7.2-reason-set#required", "UpdateMachine/needs_new_vm", "UpdateMachine #2 of",
		refusedUpdate(func(_ *driverv1alpha1.UpdateMachineRequest, n *driverv1alpha1.NeedsNewVM, call int) {
			if call > 1 {
				n.Reason = ""
			}
		}))
	add("update reason quotes the secrets", "R-8.3-not-put-secret-values#other-fields", "UpdateMachine/needs_new_vm", "the UpdateMachine response contains the canary secret",
		refusedUpdate(func(u *driverv1alpha1.UpdateMachineRequest, n *driverv1alpha1.NeedsNewVM, _ int) {
			n.Reason += " (credentials " + secretsOf(u) + ")"
		}))
	add("update state carries the secrets", "R-4.7-core-not-interpret-but", "UpdateMachine/applies_in_place", "the UpdateMachine response's last_known_state contains the canary",
		onRPC("UpdateMachine", func(_ *refDriver, _ context.Context, req any, next func() (any, error)) (any, error) {
			resp, err := next()
			if r, ok := resp.(*driverv1alpha1.UpdateMachineResponse); ok && err == nil {
				r.LastKnownState = fmt.Sprintf(`{"creds":%q}`, secretsOf(req))
			}
			return resp, err
		}))
	// §7.2, §9: a lock per class instead of per machine.
	for _, code := range []codes.Code{codes.Aborted, codes.Internal} {
		st := &hookState{}
		add(fmt.Sprintf("updates of one class above two at once answer %v", code), "R-7.2-aborted", "UpdateMachine/in_parallel", "one of 4 machines of the class updated at once, answered",
			onRPC("UpdateMachine", func(_ *refDriver, _ context.Context, _ any, next func() (any, error)) (any, error) {
				st.mu.Lock()
				st.inUse++
				n := st.inUse
				st.mu.Unlock()
				defer func() { st.mu.Lock(); st.inUse--; st.mu.Unlock() }()
				if n > 2 {
					return nil, status.Error(code, "another update of the class is in progress")
				}
				time.Sleep(150 * time.Millisecond) // the provider call, so that the calls overlap
				return next()
			}))
	}
	add("applied update answers another node name on a repeat", "R-6.7.3-applied-keeps-vm", "UpdateMachine/applies_in_place", "UpdateMachine #2 of",
		func() hookFunc {
			st := &hookState{}
			return appliedUpdate(func(_ *refDriver, v *refVM, r *driverv1alpha1.UpdateMachineResponse) {
				if st.count(v.providerID) > 1 {
					r.GetApplied().NodeName += "-2"
				}
			})
		}())
	add("repeated needs_new_vm turns into an error", "R-6.7.3-needs-new-vm-not-error", "UpdateMachine/needs_new_vm", "UpdateMachine #3 of",
		func() hookFunc {
			st := &hookState{}
			return onRPC("UpdateMachine", func(_ *refDriver, _ context.Context, req any, next func() (any, error)) (any, error) {
				resp, err := next()
				if r, ok := resp.(*driverv1alpha1.UpdateMachineResponse); ok && err == nil && r.GetNeedsNewVm() != nil &&
					st.count(req.(*driverv1alpha1.UpdateMachineRequest).GetMachine().GetProviderId()) >= 3 {
					return nil, status.Error(codes.FailedPrecondition, "the change needs a new VM")
				}
				return resp, err
			})
		}())
	return out
}

// lateMutants change an answer that must stay the same only late in the
// run, after the checks at its start.
func lateMutants() []mutant {
	var out []mutant
	add := func(name, id, want string, h hookFunc) {
		out = append(out, mutant{name: name, id: id, m: mutation{hook: h}, test: "Identity/stable_to_the_end", want: want})
	}
	infoLate := func(f func(r *driverv1alpha1.GetPluginInfoResponse)) hookFunc {
		st := &hookState{}
		return onRPC("GetPluginInfo", func(_ *refDriver, _ context.Context, _ any, next func() (any, error)) (any, error) {
			resp, err := next()
			if r, ok := resp.(*driverv1alpha1.GetPluginInfoResponse); ok && err == nil && st.count("") > lateAfter {
				f(r)
			}
			return resp, err
		})
	}
	add("manifest changes late in the run", "R-2.7-stable-identity#info", "GetPluginInfo, read before", infoLate(func(r *driverv1alpha1.GetPluginInfoResponse) { r.Manifest["uptime"] = "long" }))
	add("vendor version changes late in the run", "R-2.7-stable-identity#info", "GetPluginInfo, read before", infoLate(func(r *driverv1alpha1.GetPluginInfoResponse) { r.VendorVersion = "v0.2.0" }))
	add("providers change late in the run", "R-2.7-stable-identity#info", "GetPluginInfo, read before", infoLate(func(r *driverv1alpha1.GetPluginInfoResponse) { r.Providers = append(r.Providers, "late") }))
	add("a provider listed twice late in the run", "R-2.7-stable-identity#info", "GetPluginInfo, read before", infoLate(func(r *driverv1alpha1.GetPluginInfoResponse) {
		r.Providers = append(r.Providers, "reference", "reference")
	}))
	add("name changes late in the run", "R-2.7-stable-identity#info", "GetPluginInfo, read before", infoLate(func(r *driverv1alpha1.GetPluginInfoResponse) { r.Name += ".v2" }))
	add("identity fails late in the run", "R-2.7-stable-identity#info", "answered INTERNAL", func() hookFunc {
		st := &hookState{}
		return onRPC("GetPluginInfo", func(_ *refDriver, _ context.Context, _ any, next func() (any, error)) (any, error) {
			if st.count("") > lateAfter {
				return nil, status.Error(codes.Internal, "the provider session expired")
			}
			return next()
		})
	}())
	add("capabilities grow late in the run", "R-3.4-stable-capabilities", "GetPluginCapabilities, read before", func() hookFunc {
		st := &hookState{}
		return onRPC("GetPluginCapabilities", func(_ *refDriver, _ context.Context, _ any, next func() (any, error)) (any, error) {
			resp, err := next()
			if r, ok := resp.(*driverv1alpha1.GetPluginCapabilitiesResponse); ok && err == nil && st.count("") > lateAfter {
				r.Capabilities = r.Capabilities[:len(r.Capabilities)-1]
			}
			return resp, err
		})
	}())
	// progress counts the samples of GetPluginInfo, taken before every
	// check: past lateAfter the run is in its last third.
	late := func(st *hookState, rpc string) bool {
		if rpc == "GetPluginInfo" {
			st.count("info")
		}
		st.mu.Lock()
		defer st.mu.Unlock()
		return st.n["info"] > lateAfter
	}
	add("shared VM's node name changes late in the run", "R-4.8-node-name-stable", "at the end of the run returned node name", func() hookFunc {
		st := &hookState{}
		return func(_ *refDriver, _ context.Context, rpc string, req any, next func() (any, error)) (any, error) {
			isLate := late(st, rpc)
			resp, err := next()
			if r, ok := resp.(*driverv1alpha1.GetMachineStatusResponse); ok && err == nil && strings.HasSuffix(machineOf(req).GetName(), "-shared") && isLate {
				r.NodeName += "-renamed"
			}
			return resp, err
		}
	}())
	add("shared VM's provider ID changes late in the run", "R-4.8-provider-id-unique-stable#stable", "at the end of the run returned provider ID", func() hookFunc {
		st := &hookState{}
		return func(_ *refDriver, _ context.Context, rpc string, req any, next func() (any, error)) (any, error) {
			isLate := late(st, rpc)
			resp, err := next()
			if r, ok := resp.(*driverv1alpha1.GetMachineStatusResponse); ok && err == nil && strings.HasSuffix(machineOf(req).GetName(), "-shared") && isLate {
				r.ProviderId += "-moved"
			}
			return resp, err
		}
	}())
	add("shared VM forgotten late in the run", "R-4.8-node-name-stable", "at the end of the run answered NOT_FOUND", func() hookFunc {
		st := &hookState{}
		return func(_ *refDriver, _ context.Context, rpc string, req any, next func() (any, error)) (any, error) {
			if m := machineOf(req); late(st, rpc) && rpc == "GetMachineStatus" && strings.HasSuffix(m.GetName(), "-shared") {
				return nil, status.Errorf(codes.NotFound, "machine %s has no VM", m.GetName())
			}
			return next()
		}
	}())
	return out
}

// limitMutants answer one byte or entry over a documented limit.
func limitMutants() []mutant {
	var out []mutant
	add := func(name, id, test, want string, h hookFunc) {
		out = append(out, mutant{name: name, id: id, m: mutation{hook: h}, test: test, want: want})
	}
	info := func(f func(r *driverv1alpha1.GetPluginInfoResponse)) hookFunc {
		return onRPC("GetPluginInfo", func(_ *refDriver, _ context.Context, _ any, next func() (any, error)) (any, error) {
			resp, err := next()
			if r, ok := resp.(*driverv1alpha1.GetPluginInfoResponse); ok && err == nil {
				f(r)
			}
			return resp, err
		})
	}
	add("plugin name of 64 characters", "R-5.1.2-name-form#length", "Identity/plugin_name", "has 64 characters", info(func(r *driverv1alpha1.GetPluginInfoResponse) { r.Name = strings.Repeat("a", 64) }))
	add("plugin name ending in a dot", "R-5.1.2-name-form#form", "Identity/plugin_name", "breaks the pattern", info(func(r *driverv1alpha1.GetPluginInfoResponse) { r.Name += "." }))
	add("empty plugin name", "R-5.1.2-name-form#form", "Identity/plugin_name", "the name is empty", info(func(r *driverv1alpha1.GetPluginInfoResponse) { r.Name = "" }))
	add("vendor version of 129 bytes", "R-5.1.2-vendor-version-form", "Identity/vendor_version", "has 129 bytes", info(func(r *driverv1alpha1.GetPluginInfoResponse) { r.VendorVersion = "v1.0.0-" + strings.Repeat("a", 122) }))
	add("manifest key of 129 bytes", "R-5.1.2-manifest-limits#keys", "Identity/manifest", "has a key of 129", info(func(r *driverv1alpha1.GetPluginInfoResponse) { r.Manifest[strings.Repeat("k", 129)] = "v" }))
	add("manifest value of 129 bytes", "R-5.1.2-manifest-limits#values", "Identity/manifest", "a value of 129 bytes", info(func(r *driverv1alpha1.GetPluginInfoResponse) { r.Manifest["k"] = strings.Repeat("v", 129) }))
	add("provider of 64 bytes", "R-5.1.2-providers-form#size", "Identity/providers", "has 64 bytes", info(func(r *driverv1alpha1.GetPluginInfoResponse) { r.Providers = []string{strings.Repeat("p", 64)} }))
	// The limit is in bytes (§3.6): 32 two-byte characters are over it.
	add("provider of 32 characters in 64 bytes", "R-5.1.2-providers-form#size", "Identity/providers", "has 64 bytes", info(func(r *driverv1alpha1.GetPluginInfoResponse) { r.Providers = []string{strings.Repeat("é", 32)} }))
	add("empty provider", "R-5.1.2-providers-form#size", "Identity/providers", "has 0 bytes", info(func(r *driverv1alpha1.GetPluginInfoResponse) { r.Providers = []string{"reference", ""} }))
	create := func(f func(r *driverv1alpha1.CreateMachineResponse)) hookFunc {
		return onRPC("CreateMachine", func(_ *refDriver, _ context.Context, _ any, next func() (any, error)) (any, error) {
			resp, err := next()
			if r, ok := resp.(*driverv1alpha1.CreateMachineResponse); ok && err == nil {
				f(r)
			}
			return resp, err
		})
	}
	out = append(out, mutant{name: "provider ID of 2049 bytes", id: "R-4.2-sender-respect-these-limits",
		m: mutation{leavesVMs: true, hook: create(func(r *driverv1alpha1.CreateMachineResponse) {
			r.ProviderId += strings.Repeat("x", 2049-len(r.ProviderId))
		})},
		test: "CreateMachine/success", want: "a provider_id of 2049 bytes"})
	add("empty provider ID", "R-4.2-sender-respect-these-limits", "CreateMachine/success", "returned an empty provider_id", create(func(r *driverv1alpha1.CreateMachineResponse) { r.ProviderId = "" }))
	add("empty node name", "R-4.2-sender-respect-these-limits", "CreateMachine/success", "returned an empty node_name", create(func(r *driverv1alpha1.CreateMachineResponse) { r.NodeName = "" }))
	add("node name of 254 characters", "R-4.2-sender-respect-these-limits", "CreateMachine/success", "which is not a DNS-1123 subdomain", create(func(r *driverv1alpha1.CreateMachineResponse) {
		r.NodeName = strings.Repeat("n", 254)
	}))
	add("last_known_state over 64 KiB", "R-4.2-sender-respect-these-limits", "CreateMachine/success", "more than 64 KiB", create(func(r *driverv1alpha1.CreateMachineResponse) {
		r.LastKnownState = fmt.Sprintf(`{"VM":%q,"pad":%q}`, r.ProviderId, strings.Repeat("p", 64<<10))
	}))
	add("volume ID of 1025 bytes", "R-6.6.3-one-entry-per-volume", "GetVolumeIDs/response_shape", "1025", onRPC("GetVolumeIDs", func(_ *refDriver, _ context.Context, _ any, next func() (any, error)) (any, error) {
		resp, err := next()
		if r, ok := resp.(*driverv1alpha1.GetVolumeIDsResponse); ok && err == nil {
			for _, v := range r.GetVolumeIds() {
				v.VolumeId = strings.Repeat("v", 1025)
			}
		}
		return resp, err
	}))
	return out
}

// orderMutants break a rule only after a delete and a re-create, for a
// namespace mismatch, or for calls at once.
func orderMutants() []mutant {
	var out []mutant
	add := func(name, id, test, want string, h hookFunc) {
		out = append(out, mutant{name: name, id: id, m: mutation{hook: h}, test: test, want: want})
	}
	mismatch := func(req any) bool {
		r, ok := req.(*driverv1alpha1.CreateMachineRequest)
		return ok && r.GetMachineClass().GetNamespace() != "" && r.GetMachine().GetNamespace() != "" && r.GetMachineClass().GetNamespace() != r.GetMachine().GetNamespace()
	}
	add("namespace mismatch creates a VM and answers INVALID_ARGUMENT", "R-4.9-createmachine-request-two#no-vm", "CreateMachine/invalid_arguments", "no VM may be created",
		onRPC("CreateMachine", func(_ *refDriver, _ context.Context, req any, next func() (any, error)) (any, error) {
			if mismatch(req) {
				r := req.(*driverv1alpha1.CreateMachineRequest)
				r.MachineClass.Namespace = r.GetMachine().GetNamespace()
				_, _ = next()
				return nil, status.Error(codes.InvalidArgument, "machine_class.namespace must equal machine.namespace")
			}
			return next()
		}))
	add("namespace mismatch accepted", "R-4.9-createmachine-request-two#code", "CreateMachine/invalid_arguments", "namespace differs answered OK",
		onRPC("CreateMachine", func(_ *refDriver, _ context.Context, req any, next func() (any, error)) (any, error) {
			if mismatch(req) {
				r := req.(*driverv1alpha1.CreateMachineRequest)
				r.MachineClass.Namespace = r.GetMachine().GetNamespace()
			}
			return next()
		}))
	add("namespace mismatch not named", "R-4.9-createmachine-request-two#names-field", "CreateMachine/invalid_arguments", "does not name the field machine_class.namespace",
		onRPC("CreateMachine", func(_ *refDriver, _ context.Context, req any, next func() (any, error)) (any, error) {
			if mismatch(req) {
				return nil, status.Error(codes.InvalidArgument, "the namespaces differ")
			}
			return next()
		}))
	add("repeated create compares the raw spec with the stored one", "R-6.1.3-byte-identical-compatible", "CreateMachine/idempotent", "with a byte-identical provider_spec",
		onRPC("CreateMachine", func(d *refDriver, _ context.Context, req any, next func() (any, error)) (any, error) {
			r := req.(*driverv1alpha1.CreateMachineRequest)
			if len(d.liveOf(r.GetMachine().GetName())) > 0 {
				// The stored spec has the defaults filled in; the
				// request's has not.
				return nil, status.Errorf(codes.AlreadyExists, "machine %s has a VM with another provider_spec", r.GetMachine().GetName())
			}
			return next()
		}))
	add("delete with another machine's VM answers NOT_FOUND", "R-6.3.3-compares-finds-vm-recorded#ok", "DeleteMachine/provider_id_of_another_machine", "answered NOT_FOUND",
		onRPC("DeleteMachine", func(d *refDriver, _ context.Context, req any, next func() (any, error)) (any, error) {
			m := machineOf(req)
			if v := d.vmOf(m.GetProviderId()); v != nil && v.name != m.GetName() {
				return nil, status.Errorf(codes.NotFound, "VM %s belongs to machine %s", m.GetProviderId(), v.name)
			}
			return next()
		}))
	add("delete with another machine's VM answers FAILED_PRECONDITION", "R-6.3.3-compares-finds-vm-recorded#ok", "DeleteMachine/provider_id_of_another_machine", "answered FAILED_PRECONDITION",
		onRPC("DeleteMachine", func(d *refDriver, _ context.Context, req any, next func() (any, error)) (any, error) {
			m := machineOf(req)
			if v := d.vmOf(m.GetProviderId()); v != nil && v.name != m.GetName() {
				return nil, status.Errorf(codes.FailedPrecondition, "VM %s belongs to machine %s", m.GetProviderId(), v.name)
			}
			return next()
		}))
	add("delete of a deleted VM's ID deletes the name's new VM", "R-6.3.3-only-that-provider-id", "DeleteMachine/recreate_after_delete", "the driver deleted the new VM",
		onRPC("DeleteMachine", func(d *refDriver, _ context.Context, req any, next func() (any, error)) (any, error) {
			m := machineOf(req)
			d.mu.Lock()
			gone := false
			for _, v := range d.vms {
				if v.providerID == m.GetProviderId() && v.deleted {
					gone = true
				}
			}
			d.mu.Unlock()
			if live := d.liveOf(m.GetName()); gone && len(live) > 0 {
				m.ProviderId = live[0]
			}
			return next()
		}))
	for _, rpc := range []string{"GetMachineStatus", "DeleteMachine"} {
		st := &hookState{}
		add(rpc+" of distinct machines aborted above two at once", "R-7.2-aborted", "Concurrency/distinct_machines_in_parallel", rpc+" of selftest-",
			onRPC(rpc, func(_ *refDriver, _ context.Context, req any, next func() (any, error)) (any, error) {
				if !strings.Contains(machineOf(req).GetName(), "-parallel-") {
					return next()
				}
				st.mu.Lock()
				st.inUse++
				n := st.inUse
				st.mu.Unlock()
				defer func() { st.mu.Lock(); st.inUse--; st.mu.Unlock() }()
				if n > 2 {
					return nil, status.Error(codes.Aborted, "the driver is busy")
				}
				time.Sleep(150 * time.Millisecond)
				return next()
			}))
	}
	// §6.6.4: each malformed volume, three ways to get it wrong; the
	// clauses broken: the trigger (a wrong code), the naming, the skip.
	for i, c := range []struct {
		field, id               string
		trigger, named, skipped string
		bad                     func(pv *driverv1alpha1.PersistentVolume) bool
	}{
		{"volumes[1].name", "R-6.6.4-invalid-argument-volumes", "no-name", "no-name", "no-name", func(pv *driverv1alpha1.PersistentVolume) bool { return pv.GetName() == "" }},
		{"volumes[1].spec", "R-6.6.4-invalid-argument-naming", "not-json", "names-field", "not-skipped", func(pv *driverv1alpha1.PersistentVolume) bool { return len(pv.GetSpec()) == 0 }},
		{"volumes[1].spec", "R-6.6.4-invalid-argument-naming", "not-json", "names-field", "not-skipped", func(pv *driverv1alpha1.PersistentVolume) bool {
			return len(pv.GetSpec()) > 0 && !json.Valid(pv.GetSpec())
		}},
		{"volumes[1].spec", "R-6.6.4-invalid-argument-naming", "not-object", "names-field", "not-skipped", func(pv *driverv1alpha1.PersistentVolume) bool {
			b := strings.TrimSpace(string(pv.GetSpec()))
			return json.Valid(pv.GetSpec()) && (strings.HasPrefix(b, "[") || strings.HasPrefix(b, `"`))
		}},
	} {
		what := "malformed"
		if strings.HasSuffix(c.field, "name") {
			what = "missing"
		}
		bad := func(req any) bool {
			for _, pv := range req.(*driverv1alpha1.GetVolumeIDsRequest).GetVolumes() {
				if c.bad(pv) {
					return true
				}
			}
			return false
		}
		add(fmt.Sprintf("GetVolumeIDs %s %s #%d answers INTERNAL", c.field, what, i), c.id+"#"+c.trigger, "GetVolumeIDs/invalid_arguments", "answered INTERNAL",
			onRPC("GetVolumeIDs", func(_ *refDriver, _ context.Context, req any, next func() (any, error)) (any, error) {
				if bad(req) {
					return nil, status.Error(codes.Internal, "cannot parse the volume")
				}
				return next()
			}))
		add(fmt.Sprintf("GetVolumeIDs %s %s #%d not named", c.field, what, i), c.id+"#"+c.named, "GetVolumeIDs/invalid_arguments", "does not name the field",
			onRPC("GetVolumeIDs", func(_ *refDriver, _ context.Context, req any, next func() (any, error)) (any, error) {
				if bad(req) {
					return nil, status.Error(codes.InvalidArgument, "a volume is malformed")
				}
				return next()
			}))
		add(fmt.Sprintf("GetVolumeIDs %s %s #%d skipped", c.field, what, i), c.id+"#"+c.skipped, "GetVolumeIDs/invalid_arguments", "want INVALID_ARGUMENT",
			onRPC("GetVolumeIDs", func(_ *refDriver, _ context.Context, req any, next func() (any, error)) (any, error) {
				if bad(req) {
					return &driverv1alpha1.GetVolumeIDsResponse{}, nil
				}
				return next()
			}))
	}
	add("distinct machines aborted above two at once", "R-7.2-aborted", "Concurrency/distinct_machines_in_parallel", "no other call for",
		func() hookFunc {
			st := &hookState{}
			return onRPC("CreateMachine", func(_ *refDriver, _ context.Context, _ any, next func() (any, error)) (any, error) {
				st.mu.Lock()
				st.inUse++
				n := st.inUse
				st.mu.Unlock()
				defer func() { st.mu.Lock(); st.inUse--; st.mu.Unlock() }()
				if n > 2 {
					return nil, status.Error(codes.Aborted, "the driver is busy")
				}
				time.Sleep(150 * time.Millisecond)
				return next()
			})
		}())
	add("listing of another class throttled for a whole timeout", "R-7.2-unavailable", "ListMachines/scoped_to_class", "UNAVAILABLE for the whole",
		onRPC("ListMachines", func(_ *refDriver, _ context.Context, req any, next func() (any, error)) (any, error) {
			// Only the class name ListMachines/scoped_to_class asks for:
			// one wait of the List timeout, not one per listing.
			if strings.HasPrefix(req.(*driverv1alpha1.ListMachinesRequest).GetMachineClass().GetName(), "reference-other") {
				return nil, status.Error(codes.Unavailable, "rate limit exceeded at the provider")
			}
			return next()
		}))
	add("annotations compared on a repeated create", "R-6.1.3-not-compare-secrets-user-data#annotations", "CreateMachine/ignored_fields", "with other labels and annotations answered ALREADY_EXISTS",
		func() hookFunc {
			st := &hookState{seen: map[string]bool{}}
			return onRPC("CreateMachine", func(d *refDriver, _ context.Context, req any, next func() (any, error)) (any, error) {
				m := machineOf(req)
				key := m.GetName() + fmt.Sprint(m.GetAnnotations())
				st.mu.Lock()
				first := len(d.liveOf(m.GetName())) == 0
				if first {
					st.seen[key] = true
				}
				known := st.seen[key]
				st.mu.Unlock()
				if !first && !known && m.GetAnnotations()["conformance.machina.io/changed"] != "" {
					return nil, status.Errorf(codes.AlreadyExists, "machine %s has a VM with other annotations", m.GetName())
				}
				return next()
			})
		}())
	add("repeated create without last_known_state refused", "R-6.1.3-not-compare-secrets-user-data#last-known-state", "CreateMachine/ignored_fields", "with no last_known_state answered",
		onRPC("CreateMachine", func(d *refDriver, _ context.Context, req any, next func() (any, error)) (any, error) {
			r := req.(*driverv1alpha1.CreateMachineRequest)
			if strings.HasSuffix(r.GetMachine().GetName(), "-shared") && len(d.liveOf(r.GetMachine().GetName())) > 0 && r.GetLastKnownState() == "" {
				return nil, status.Errorf(codes.AlreadyExists, "machine %s exists; send its last_known_state", r.GetMachine().GetName())
			}
			return next()
		}))
	add("third repeated create returns a new provider ID", "R-6.1.3-one-vm-compatible-request", "CreateMachine/idempotent", "call #3 returned provider ID",
		func() hookFunc {
			st := &hookState{}
			return onRPC("CreateMachine", func(_ *refDriver, _ context.Context, req any, next func() (any, error)) (any, error) {
				resp, err := next()
				if r, ok := resp.(*driverv1alpha1.CreateMachineResponse); ok && err == nil && strings.HasSuffix(machineOf(req).GetName(), "-idempotent") && st.count("") == 4 {
					r.ProviderId += "-3"
				}
				return resp, err
			})
		}())
	// ALREADY_EXISTS, but the VM takes the incompatible spec all the same:
	// "not change the existing one" (§6.1.3).
	add("incompatible create changes the VM", "R-6.1.3-one-vm-incompatible-request#unchanged", "CreateMachine/incompatible_repeat", "the incompatible call changed the VM",
		onRPC("CreateMachine", func(d *refDriver, ctx context.Context, req any, next func() (any, error)) (any, error) {
			resp, err := next()
			r := req.(*driverv1alpha1.CreateMachineRequest)
			if status.Code(err) == codes.AlreadyExists {
				if spec, serr := d.canonicalSpec(r, r.GetMachineClass().GetProviderSpec()); serr == nil {
					d.mu.Lock()
					for _, v := range d.find(ctx, r.GetMachine()) {
						v.spec = spec
					}
					d.mu.Unlock()
				}
			}
			return resp, err
		}))
	// A repeated InitializeMachine answers other values than the first:
	// "with the current values" (§6.2.3).
	add("second initialize answers another node name", "R-6.2.3-call-vm-already-initialized#current-values", "InitializeMachine/initializes", "InitializeMachine #1 returned",
		func() hookFunc {
			st := &hookState{}
			return onRPC("InitializeMachine", func(_ *refDriver, _ context.Context, req any, next func() (any, error)) (any, error) {
				resp, err := next()
				if r, ok := resp.(*driverv1alpha1.InitializeMachineResponse); ok && err == nil && st.count(machineOf(req).GetName()) > 1 {
					r.NodeName += "-again"
				}
				return resp, err
			})
		}())
	return out
}
