package manager

import (
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/classupdate"
	"github.com/machina-io/machina/core/internal/controller/healthcheck"
	"github.com/machina-io/machina/core/internal/controller/machine"
	"github.com/machina-io/machina/core/internal/controller/machineclass"
	"github.com/machina-io/machina/core/internal/controller/machinedeployment"
	"github.com/machina-io/machina/core/internal/controller/machineset"
	"github.com/machina-io/machina/core/internal/controller/node"
	"github.com/machina-io/machina/core/internal/controller/safety/apiserver"
	"github.com/machina-io/machina/core/internal/controller/safety/orphan"
	"github.com/machina-io/machina/core/internal/controller/safety/overshoot"
	"github.com/machina-io/machina/core/internal/controller/secret"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/internal/driver"
	"github.com/machina-io/machina/core/internal/meltdown"
)

// setupControllers builds every controller and leader-only check of one
// leadership term on mgr (term.go): what it adds runs only while this
// replica leads. Each controller gets --concurrent-syncs workers. Without
// a target cluster the Node controller does not run, and the others leave
// Nodes alone. Every call for a machine, a class or an orphan scan goes to
// the driver of its class's provider, found through drivers.
func (m *Manager) setupControllers(drivers *driver.Set, mgr *term) error {
	workers := m.opts.ConcurrentSyncs
	// Interfaces stay nil (not typed nil) without a target cluster.
	var target cluster.Cluster
	var targetClient client.Client
	if m.target != nil {
		target = mgr.cluster(m.target)
		targetClient = m.target.GetClient()
	}

	machines := &machine.Reconciler{
		Drivers: drivers,
		Options: machine.Options{
			CreationTimeout:               m.opts.MachineCreationTimeout,
			HealthTimeout:                 m.opts.MachineHealthTimeout,
			DrainTimeout:                  m.opts.MachineDrainTimeout,
			InPlaceUpdateTimeout:          m.opts.MachineInPlaceUpdateTimeout,
			PreserveTimeout:               m.opts.MachinePreserveTimeout,
			PVDetachTimeout:               m.opts.MachinePVDetachTimeout,
			PVReattachTimeout:             m.opts.MachinePVReattachTimeout,
			MaxEvictRetries:               int32(m.opts.MachineMaxEvictRetries),
			NodeConditions:                m.opts.NodeConditions,
			BootstrapTokenAuthExtraGroups: m.opts.BootstrapTokenAuthExtraGroups,
			ResourceExhaustedRetry:        m.opts.ResourceExhaustedRetry,
			VMStatusCheckPeriod:           m.opts.vmStatusCheckPeriod(),
			MaxConcurrentReconciles:       workers,
		},
	}
	// The Machine controller stands still on health decisions while the
	// API servers are unreachable, and fails at most
	// --machine-max-replacements machines of a deployment at a time.
	machines.Gate = m.gate
	// A driver's OUT_OF_RANGE (several VMs for one machine) asks the orphan
	// collector below for a scan at once.
	orphanScans := orphan.NewTrigger()
	machines.OrphanScan = orphanScans.Fire
	machines.Meltdown = meltdown.NewGuard(mgr.GetClient(), meltdown.MustParseLimit(m.opts.MachineMaxReplacements))
	if err := machines.SetupWithManager(mgr, setup.Env{Target: target}); err != nil {
		return fmt.Errorf("machine controller: %w", err)
	}

	setOpts := machineset.DefaultOptions()
	// The machine controller runs here: machines are created with its
	// finalizer, which spares it a write per machine.
	setOpts.NewMachineFinalizers = []string{v1alpha1.MachineFinalizer}
	sets := &machineset.Reconciler{Gate: m.gate, Options: setOpts}
	if m.target != nil {
		sets.Target, sets.Pods = targetClient, m.target.GetAPIReader()
	}
	if err := sets.SetupWithManager(mgr, setup.Env{Workers: workers}); err != nil {
		return fmt.Errorf("machineset controller: %w", err)
	}

	mdOpts := machinedeployment.DefaultOptions()
	mdOpts.AutoscalerScaleDownAnnotationDuringRollout = m.opts.AutoscalerScaleDownAnnotationDuringRollout
	mdOpts.InPlaceUpdateTimeout = m.opts.MachineInPlaceUpdateTimeout
	deployments := &machinedeployment.Reconciler{Target: targetClient, Gate: m.gate, Options: mdOpts}
	if m.target != nil {
		deployments.Pods = m.target.GetAPIReader()
	}
	if err := deployments.SetupWithManager(mgr, setup.Env{Workers: workers}); err != nil {
		return fmt.Errorf("machinedeployment controller: %w", err)
	}

	// The class controller reports on each class whether a driver serves
	// its provider (condition DriverFound, and an event when none does).
	if err := (&machineclass.Reconciler{Drivers: drivers}).SetupWithManager(mgr, setup.Env{Workers: workers}); err != nil {
		return fmt.Errorf("machineclass controller: %w", err)
	}
	// Class updates: a changed MachineClass reaches the running VMs of its
	// machines through UpdateMachine, --class-update-max-concurrent at a
	// time, for drivers with the capability.
	if m.opts.ClassUpdateMaxConcurrent > 0 {
		classUpdates := &classupdate.Reconciler{
			Drivers: drivers,
			Gate:    m.gate,
			Options: classupdate.Options{MaxConcurrent: m.opts.ClassUpdateMaxConcurrent},
		}
		if err := classUpdates.SetupWithManager(mgr, setup.Env{Workers: workers}); err != nil {
			return fmt.Errorf("class update controller: %w", err)
		}
	}
	if err := (&secret.Reconciler{}).SetupWithManager(mgr, setup.Env{Workers: workers}); err != nil {
		return fmt.Errorf("secret controller: %w", err)
	}
	if target != nil {
		nodes := &node.Reconciler{UnmanagedAfter: m.opts.MachineCreationTimeout}
		if err := nodes.SetupWithManager(mgr, setup.Env{Target: target, Workers: workers}); err != nil {
			return fmt.Errorf("node controller: %w", err)
		}
		// MachineHealthChecks remediate the machines they select whose
		// Node is unhealthy, within their short-circuit; they stand still
		// with the health timeout while the API servers are unreachable.
		checks := &healthcheck.Reconciler{Gate: m.gate}
		if err := checks.SetupWithManager(mgr, setup.Env{Target: target, Workers: workers}); err != nil {
			return fmt.Errorf("machinehealthcheck controller: %w", err)
		}
	}
	// Machine configuration pools: rendering and KubeletConfigs
	// (machineconfig.go).
	if err := m.setupMachineConfigRender(mgr, target); err != nil {
		return err
	}

	// Orphan VM collection runs on the leader only, every
	// --machine-safety-orphan-vms-period, over the classes of --namespace;
	// it does nothing against a driver without ListMachines.
	orphans := &orphan.Collector{
		Drivers:   drivers,
		Period:    m.opts.MachineSafetyOrphanVMsPeriod,
		Namespace: m.opts.Namespace,
		Trigger:   orphanScans,
	}
	if err := orphans.SetupWithManager(mgr, setup.Env{}); err != nil {
		return fmt.Errorf("orphan VM collector: %w", err)
	}

	// The overshoot freeze labels MachineSets that have far more machines
	// than wanted; the MachineSet controller then creates no more.
	overshoots := &overshoot.Reconciler{
		SafetyUp:   int32(m.opts.SafetyUp),
		SafetyDown: int32(m.opts.SafetyDown),
		Period:     m.opts.MachineSafetyOvershootingPeriod,
	}
	if err := overshoots.SetupWithManager(mgr, setup.Env{Workers: workers}); err != nil {
		return fmt.Errorf("overshoot safety controller: %w", err)
	}

	// The API server check freezes m.gate while an API server is
	// unreachable (the election freezes it too, when it loses the lease),
	// and when all are back resets the health timeout of Unknown machines,
	// waits for the caches to catch up and unfreezes with a grace period.
	clusters := make([]apiserver.Cluster, 0, len(m.probes))
	for _, p := range m.probes {
		clusters = append(clusters, apiserver.Cluster{Name: p.name, Config: p.config})
	}
	checker := &apiserver.Checker{
		Clusters:  clusters,
		Gate:      m.gate,
		Namespace: m.opts.Namespace,
		Period:    m.opts.MachineSafetyAPIServerStatusCheckPeriod,
		Timeout:   m.opts.MachineSafetyAPIServerStatusCheckTimeout,
		// The gate opens only once every cache has caught up.
		CatchUp: m.caches.Wait,
	}
	if err := checker.SetupWithManager(mgr, setup.Env{}); err != nil {
		return fmt.Errorf("API server safety check: %w", err)
	}
	return nil
}
