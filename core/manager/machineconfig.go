package manager

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	mcfgv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
	"github.com/machina-io/machina/core/internal/controller/mcdrain"
	"github.com/machina-io/machina/core/internal/controller/mcgc"
	"github.com/machina-io/machina/core/internal/controller/mckubelet"
	"github.com/machina-io/machina/core/internal/controller/mcpool"
	"github.com/machina-io/machina/core/internal/controller/mcrender"
	"github.com/machina-io/machina/core/internal/controller/mcruntime"
	"github.com/machina-io/machina/core/internal/controller/mctemplate"
	"github.com/machina-io/machina/core/internal/controller/setup"
)

// setupMachineConfigRender sets up the render controller, the collector of
// rendered configurations, the KubeletConfig, template and
// ContainerRuntimeConfig controllers, and the pool update and drain
// controllers
// (docs/machine-config.md) on the target cluster, where the pools, the
// MachineConfigs and the Nodes are. Without a target cluster, or in a
// target cluster without the machineconfiguration.openshift.io CRDs, they
// do not run: machine configuration is optional.
func (m *Manager) setupMachineConfigRender(mgr ctrl.Manager, target cluster.Cluster) error {
	if target == nil {
		return nil
	}
	gk := schema.GroupKind{Group: mcfgv1.GroupVersion.Group, Kind: "MachineConfigPool"}
	if _, err := target.GetRESTMapper().RESTMapping(gk, mcfgv1.GroupVersion.Version); err != nil {
		if meta.IsNoMatchError(err) {
			m.log.Info("The target cluster serves no MachineConfigPools: machine configuration controllers off",
				"group", mcfgv1.GroupVersion.String())
			return nil
		}
		return fmt.Errorf("looking up MachineConfigPools in the target cluster: %w", err)
	}
	workers := m.opts.ConcurrentSyncs
	if err := (&mcrender.Reconciler{}).SetupWithManager(mgr, setup.Env{Target: target, Workers: workers}); err != nil {
		return fmt.Errorf("machine config render controller: %w", err)
	}
	if err := (&mcgc.Collector{Grace: m.opts.MachineConfigGCGrace}).SetupWithManager(mgr, setup.Env{Target: target, Workers: 1}); err != nil {
		return fmt.Errorf("rendered machine config collector: %w", err)
	}
	if err := (&mckubelet.Reconciler{}).SetupWithManager(mgr, setup.Env{Target: target, Workers: workers}); err != nil {
		return fmt.Errorf("kubelet config controller: %w", err)
	}
	// The template and ContainerRuntimeConfig controllers need CRDs newer
	// than the others: a cluster without them runs the rest.
	if served, err := m.serves(target, "ControllerConfig"); err != nil {
		return err
	} else if served {
		if err := (&mctemplate.Reconciler{}).SetupWithManager(mgr, setup.Env{Target: target, Workers: 1}); err != nil {
			return fmt.Errorf("machine config template controller: %w", err)
		}
	}
	if served, err := m.serves(target, "ContainerRuntimeConfig"); err != nil {
		return err
	} else if served {
		if err := (&mcruntime.Reconciler{}).SetupWithManager(mgr, setup.Env{Target: target, Workers: workers}); err != nil {
			return fmt.Errorf("container runtime config controller: %w", err)
		}
	}
	// The update controller rolls each pool's rendered configuration out to
	// its Nodes; the drain controller answers the node agents' drain and
	// uncordon requests.
	if err := (&mcpool.Reconciler{}).SetupWithManager(mgr, setup.Env{Target: target, Workers: workers}); err != nil {
		return fmt.Errorf("machine config pool update controller: %w", err)
	}
	if err := (&mcdrain.Reconciler{}).SetupWithManager(mgr, setup.Env{Target: target, Workers: workers}); err != nil {
		return fmt.Errorf("machine config drain controller: %w", err)
	}
	return nil
}

// serves reports whether target serves kind of machineconfiguration.openshift.io;
// a kind it does not serve is logged.
func (m *Manager) serves(target cluster.Cluster, kind string) (bool, error) {
	gk := schema.GroupKind{Group: mcfgv1.GroupVersion.Group, Kind: kind}
	if _, err := target.GetRESTMapper().RESTMapping(gk, mcfgv1.GroupVersion.Version); err != nil {
		if meta.IsNoMatchError(err) {
			m.log.Info("The target cluster does not serve "+kind+"s: its controller is off", "group", mcfgv1.GroupVersion.String())
			return false, nil
		}
		return false, fmt.Errorf("looking up %ss in the target cluster: %w", kind, err)
	}
	return true, nil
}
