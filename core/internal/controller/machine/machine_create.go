package machine

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/bootstrap"
	"github.com/machina-io/machina/core/internal/controller/phase"
	"github.com/machina-io/machina/core/internal/driver"
	"github.com/machina-io/machina/core/internal/driverclass"
	"github.com/machina-io/machina/core/internal/mcmmetrics"
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// needsCreation tells whether the creation flow runs (Driver API §11.2): for
// a new machine (phase empty), one in CrashLoopBackOff, or one without a
// provider ID. A Failed machine waits for its MachineSet to replace it.
func needsCreation(m *v1alpha1.Machine) bool {
	switch m.Status.CurrentStatus.Phase {
	case v1alpha1.MachineFailed:
		return false
	case "", v1alpha1.MachineCrashLoopBackOff:
		return true
	}
	return m.Spec.ProviderID == ""
}

// reconcileCreate runs one pass of the creation flow: look the VM up, create
// it if there is none, initialize it if the driver asks for that, and move
// the machine to Pending. Every failure ends the pass; the next pass starts
// again with the lookup, so a VM whose creation answer was lost is adopted,
// never created twice.
func (r *Reconciler) reconcileCreate(ctx context.Context, s *scope) (phase.Result, error) {
	m := s.machine
	if !needsCreation(m) {
		return phase.Result{}, nil
	}
	if err := r.loadClass(ctx, s); err != nil {
		return r.classProblem(s, v1alpha1.MachineOperationCreate, err)
	}

	// Step 1: look the VM up by name (and provider ID when known).
	st, err := s.driver.GetMachineStatus(ctx, &driverv1alpha1.GetMachineStatusRequest{
		Machine:      machineMessage(m),
		MachineClass: driverclass.Message(s.class),
		Secrets:      s.secrets,
	})
	code := driver.Code(err)
	if !statusForCreateTable.react(code).proceed {
		return r.creationFailed(s, statusForCreateTable, code, status.Convert(err).Message())
	}

	var vm vmInfo
	var created, initialize bool
	switch {
	case code == codes.OK:
		vm = vmInfo{providerID: st.GetProviderId(), nodeName: st.GetNodeName(), addresses: st.GetAddresses()}
		if err := vm.validate(r.Target != nil); err != nil {
			return r.invalidResponse(s, statusForCreateTable, err)
		}
		if m.Spec.ProviderID != "" && vm.providerID != m.Spec.ProviderID {
			return r.invalidResponse(s, statusForCreateTable, fmt.Errorf("provider_id %q differs from the machine's %q", vm.providerID, m.Spec.ProviderID))
		}
		if st.GetNeedsInitialization() {
			if s.driver.Has(driverv1alpha1.Capability_TYPE_INITIALIZE_MACHINE) {
				initialize = true
			} else {
				s.log.Info("Driver reported needs_initialization without advertising the InitializeMachine capability; ignoring it (driver bug)")
			}
		}
		if m.Spec.ProviderID == "" {
			r.normal(s, reasonAdopted, actionCreate, "Adopted existing VM %s", vm.providerID)
		}

	case m.Spec.ProviderID == "":
		// Step 2: no VM; create one.
		resp, code, msg := r.createVM(ctx, s)
		if resp == nil {
			if code == codes.OK {
				// The bootstrap token could not be prepared; already recorded.
				return phase.Result{RequeueAfter: r.Options.ShortRetry, Stop: true}, nil
			}
			return r.creationFailed(s, createMachineTable, code, msg)
		}
		vm = vmInfo{providerID: resp.GetProviderId(), nodeName: resp.GetNodeName(), addresses: resp.GetAddresses(), lastKnownState: resp.GetLastKnownState()}
		if err := vm.validate(r.Target != nil); err != nil {
			return r.invalidResponse(s, createMachineTable, err)
		}
		created = true
		if stale, res, err := r.staleNodeGuard(ctx, s, vm); stale || err != nil {
			return res, err
		}
		initialize = s.driver.Has(driverv1alpha1.Capability_TYPE_INITIALIZE_MACHINE)
		r.normal(s, reasonCreated, actionCreate, "Created VM %s", vm.providerID)
		mcmmetrics.ObserveCreate(r.mcmLabels(ctx, s), s.now.Sub(s.machine.CreationTimestamp.Time))

	default:
		// NOT_FOUND for a machine that has a provider ID: its VM vanished.
		// Nothing is created for it; it keeps waiting for its Node and the
		// creation timeout fails it (§6.4.4).
		vm = vmInfo{providerID: m.Spec.ProviderID, nodeName: s.nodeName()}
	}
	recordVM(s, vm, r.Target != nil)

	// Step 3: initialize, when the driver asks for it.
	if initialize {
		resp, err := s.driver.InitializeMachine(ctx, &driverv1alpha1.InitializeMachineRequest{
			Machine:        machineMessage(m),
			MachineClass:   driverclass.Message(s.class),
			Secrets:        s.secrets,
			LastKnownState: m.Status.LastKnownState,
		})
		if err != nil {
			return r.creationFailed(s, initializeMachineTable, driver.Code(err), status.Convert(err).Message())
		}
		ivm := vmInfo{providerID: resp.GetProviderId(), nodeName: resp.GetNodeName(), addresses: resp.GetAddresses(), lastKnownState: resp.GetLastKnownState()}
		if err := ivm.validate(r.Target != nil); err != nil {
			return r.invalidResponse(s, initializeMachineTable, err)
		}
		if ivm.providerID != m.Spec.ProviderID {
			return r.invalidResponse(s, initializeMachineTable, fmt.Errorf("provider_id %q differs from the machine's %q", ivm.providerID, m.Spec.ProviderID))
		}
		recordVM(s, ivm, r.Target != nil)
		r.normal(s, reasonInitialized, actionCreate, "Initialized VM %s", ivm.providerID)
		mcmmetrics.ObserveInitialize(r.mcmLabels(ctx, s), s.now.Sub(s.machine.CreationTimestamp.Time))
	}

	// Step 4: wait for the Node (or, without a target cluster, done). A
	// machine past its creation (it only lost its provider ID) keeps its
	// phase; the health checks go on with it.
	if p := m.Status.CurrentStatus.Phase; p != "" && p != v1alpha1.MachineCrashLoopBackOff {
		return phase.Result{}, nil
	}
	if r.Target == nil {
		setPhase(s, v1alpha1.MachineAvailable, false)
		setLastOperation(s, v1alpha1.MachineOperationCreate, v1alpha1.MachineStateSuccessful, "",
			fmt.Sprintf("VM %s is available", m.Spec.ProviderID))
		return phase.Result{}, nil
	}
	setPhase(s, v1alpha1.MachinePending, true)
	what := "Adopted"
	if created {
		what = "Created"
	}
	setLastOperation(s, v1alpha1.MachineOperationCreate, v1alpha1.MachineStateProcessing, "",
		fmt.Sprintf("%s VM %s; waiting for node %s to register", what, m.Spec.ProviderID, s.nodeName()))
	return phase.Result{}, nil
}

// recordVM writes what the driver said about the VM onto the Machine:
// spec.providerID, the label "node", the default deletion priority, the
// hash of the class contents it is made from, the addresses and the
// driver's last_known_state.
func recordVM(s *scope, vm vmInfo, withTarget bool) {
	m := s.machine
	m.Spec.ProviderID = vm.providerID
	if withTarget && vm.nodeName != "" {
		if m.Labels == nil {
			m.Labels = map[string]string{}
		}
		m.Labels[v1alpha1.NodeLabelKey] = vm.nodeName
	}
	if _, ok := m.Annotations[v1alpha1.MachinePriorityAnnotation]; !ok {
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations[v1alpha1.MachinePriorityAnnotation] = v1alpha1.DefaultMachinePriority
	}
	// The class contents the VM is made from, for the class update
	// controller; once set, only a successful UpdateMachine changes it.
	if _, ok := m.Annotations[v1alpha1.ClassHashAnnotation]; !ok && s.class != nil {
		if hash, err := driverclass.Hash(s.class); err == nil {
			m.Annotations[v1alpha1.ClassHashAnnotation] = hash
		}
	}
	if addrs := nodeAddresses(vm.addresses); len(addrs) > 0 {
		m.Status.Addresses = addrs
	}
	if vm.lastKnownState != "" {
		m.Status.LastKnownState = vm.lastKnownState
	}
}

// createVM calls CreateMachine with the user data's placeholders filled.
// It returns the response, or the code and message of the failure. A nil
// response with code OK means the bootstrap token could not be prepared
// (recorded on the machine).
func (r *Reconciler) createVM(ctx context.Context, s *scope) (*driverv1alpha1.CreateMachineResponse, codes.Code, string) {
	m := s.machine
	userData := s.userData
	if len(userData) > 0 {
		token := ""
		if bootstrap.NeedsToken(userData) && r.Tokens != nil {
			var err error
			token, err = r.Tokens.Ensure(withoutClientLogs(ctx), types.NamespacedName{Namespace: m.Namespace, Name: m.Name}, r.creationTimeout(s))
			if err != nil {
				desc := fmt.Sprintf("Cannot prepare the bootstrap token: %v", err)
				r.warning(s, reasonTokenFailed, actionCreate, "%s", desc)
				setLastOperation(s, v1alpha1.MachineOperationCreate, v1alpha1.MachineStateFailed, "", desc)
				return nil, codes.OK, ""
			}
		}
		userData = bootstrap.Render(userData, m.Name, token)
	}
	resp, err := s.driver.CreateMachine(ctx, &driverv1alpha1.CreateMachineRequest{
		Machine:        machineMessage(m),
		MachineClass:   driverclass.Message(s.class),
		Secrets:        s.secrets,
		UserData:       userData,
		LastKnownState: m.Status.LastKnownState,
	})
	if err != nil {
		return nil, driver.Code(err), status.Convert(err).Message()
	}
	return resp, codes.OK, ""
}

// staleNodeGuard (§11.4): providers reuse host names and addresses, so a
// new VM's node name can be that of a Node left over from an older VM. If a
// Node of that name was created before this Machine, the new VM would take
// it over: delete the new VM and fail the machine, so that its MachineSet
// replaces it. The label "node" is not set: the old Node is not this
// machine's to drain or delete.
func (r *Reconciler) staleNodeGuard(ctx context.Context, s *scope, vm vmInfo) (bool, phase.Result, error) {
	if r.Target == nil {
		return false, phase.Result{}, nil
	}
	node := &corev1.Node{}
	if err := r.Target.Get(ctx, client.ObjectKey{Name: vm.nodeName}, node); err != nil {
		if apierrors.IsNotFound(err) {
			return false, phase.Result{}, nil
		}
		return false, phase.Result{}, fmt.Errorf("reading node %s: %w", vm.nodeName, err)
	}
	if !node.CreationTimestamp.Before(&s.machine.CreationTimestamp) {
		return false, phase.Result{}, nil
	}

	m := s.machine
	desc := fmt.Sprintf("The new VM %s would register as node %s, but a Node of that name exists since %s, before this machine; deleted the new VM",
		vm.providerID, vm.nodeName, node.CreationTimestamp.UTC().Format(time.RFC3339))
	req := &driverv1alpha1.DeleteMachineRequest{
		Machine:        machineMessage(m),
		MachineClass:   driverclass.Message(s.class),
		Secrets:        s.secrets,
		LastKnownState: vm.lastKnownState,
	}
	req.Machine.ProviderId = vm.providerID
	if _, err := s.driver.DeleteMachine(ctx, req); err != nil && !deleteMachineTable.react(driver.Code(err)).proceed {
		// The machine's own deletion deletes the VM later, by provider ID.
		m.Spec.ProviderID = vm.providerID
		desc = fmt.Sprintf("The new VM %s would register as node %s, but a Node of that name exists since %s, before this machine; deleting the new VM failed (%s: %s), the machine's deletion retries it",
			vm.providerID, vm.nodeName, node.CreationTimestamp.UTC().Format(time.RFC3339), driver.Code(err), status.Convert(err).Message())
	}
	setPhase(s, v1alpha1.MachineFailed, false)
	setLastOperation(s, v1alpha1.MachineOperationCreate, v1alpha1.MachineStateFailed, "", desc)
	r.warning(s, reasonStaleNode, actionCreate, "%s", desc)
	return true, phase.Result{Stop: true}, nil
}

// creationFailed records a creation failure (§7.3): phase CrashLoopBackOff,
// or Failed once the creation timeout has passed; lastOperation {Create,
// Failed, errorCode}; a Warning event; the next pass after the table's
// retry period.
func (r *Reconciler) creationFailed(s *scope, t callTable, code codes.Code, msg string) (phase.Result, error) {
	rc := t.react(code)
	desc := fmt.Sprintf("%s failed (%s): %s", t.rpc, errorCodeName(code), msg)
	if rc.brokenDriver {
		desc = fmt.Sprintf("Broken driver: it answered UNIMPLEMENTED to %s, which it must serve: %s", t.rpc, msg)
		s.log.Error(nil, "Broken driver: UNIMPLEMENTED from an RPC it must serve", "rpc", t.rpc)
	}
	r.failCreation(s, errorCodeName(code), desc)
	return phase.Result{RequeueAfter: r.Options.after(rc.retry), Stop: true}, nil
}

// invalidResponse treats a response that breaks the Driver API's rules as
// an INTERNAL failure of the call (§4.10).
func (r *Reconciler) invalidResponse(s *scope, t callTable, err error) (phase.Result, error) {
	return r.creationFailed(s, t, codes.Internal, "driver returned an invalid response: "+err.Error())
}

// failCreation sets the phase and lastOperation of a failed creation pass.
func (r *Reconciler) failCreation(s *scope, errorCode, desc string) {
	next := v1alpha1.MachineCrashLoopBackOff
	// While frozen, and in the grace period after, the timeout fails
	// nothing: the failure may be the outage's.
	if r.creationTimedOut(s) && !r.Gate.HoldsTimeouts(s.now) {
		next = v1alpha1.MachineFailed
		desc = fmt.Sprintf("%s; the creation timeout of %s has passed", desc, r.creationTimeout(s))
	}
	setPhase(s, next, next != v1alpha1.MachineFailed)
	setLastOperation(s, v1alpha1.MachineOperationCreate, v1alpha1.MachineStateFailed, errorCode, desc)
	r.warning(s, reasonCreateFailed, actionCreate, "%s", desc)
}
