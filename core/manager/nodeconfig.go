package manager

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/machina-io/machina/core/nodeconfig"
)

// nodeConfigCA is the ConfigMap of --node-config-ca-configmap.
func (o *Options) nodeConfigCA() (types.NamespacedName, error) {
	ns, name, ok := strings.Cut(o.NodeConfigCA, "/")
	if !ok || ns == "" || name == "" {
		return types.NamespacedName{}, fmt.Errorf("--node-config-ca-configmap %q: want namespace/name", o.NodeConfigCA)
	}
	return types.NamespacedName{Namespace: ns, Name: name}, nil
}

// addNodeConfigServer adds the node configuration server to mgr when
// --node-config-bind-address asks for it. It serves from the target
// cluster, where the Nodes and MachineConfigs are, on every replica.
func (m *Manager) addNodeConfigServer(mgr manager.Manager, target cluster.Cluster) error {
	if m.opts.NodeConfigBindAddress == "" || m.opts.NodeConfigBindAddress == "0" {
		return nil
	}
	if target == nil {
		return errors.New("--node-config-bind-address: the node configuration server needs a target cluster")
	}
	ca, err := m.opts.nodeConfigCA()
	if err != nil {
		return err
	}
	// Uncached: the server reads what an agent was just told about, and
	// the ConfigMap is one object that needs no informer.
	live, err := client.New(target.GetConfig(), client.Options{Scheme: target.GetScheme(), Mapper: target.GetRESTMapper()})
	if err != nil {
		return fmt.Errorf("node configuration server: %w", err)
	}
	return mgr.Add(&nodeconfig.Endpoint{
		Server:    &nodeconfig.Server{Reader: live, Reviews: live, Log: m.log.WithName("node-config")},
		Addr:      m.opts.NodeConfigBindAddress,
		Names:     m.opts.NodeConfigNames,
		CA:        ca,
		Publisher: live,
	})
}
