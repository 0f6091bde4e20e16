package main

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/machina-io/machina/cmd/machina-node-agent/internal/durable"
	"github.com/machina-io/machina/cmd/machina-node-agent/internal/machineconfig"
	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/nodeconfig"
)

// gracefulShutdown is how long a stopping agent waits for a reconcile in
// flight. An apply that is stopped is resumed by the next start, so a short
// grace keeps SIGTERM prompt.
var gracefulShutdown = 15 * time.Second

var skipNameValidation = true

// newManager builds the controller-runtime manager of the agent: a cache
// that holds the agent's own Node and nothing else (its list and watch carry
// the field selector metadata.name=<node>, so the API server sends no other
// Node), and one controller that reconciles it.
func newManager(cfg *config, logger logr.Logger) (ctrl.Manager, error) {
	restCfg, err := restConfig(cfg.kubeconfig)
	if err != nil {
		return nil, err
	}
	restCfg.UserAgent = "machina-node-agent/" + version
	for _, dir := range []string{cfg.root, cfg.sourceDir, cfg.stateDir} {
		if info, err := os.Stat(dir); err != nil || !info.IsDir() {
			return nil, fmt.Errorf("%s is not a directory (%v)", dir, err)
		}
	}

	// A write cut short by a crash leaves a temporary file beside its
	// target; in the agent's own state directory, all of them go now (each
	// side of the agent cleans the root's on its first reconcile).
	removed, err := durable.CleanTempsUnder(cfg.stateDir)
	if err != nil {
		return nil, fmt.Errorf("removing temporary files from %s: %w", cfg.stateDir, err)
	}
	if len(removed) > 0 {
		logger.WithName("setup").Info("Removed temporary files an interrupted write left", "files", removed)
	}

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := mcv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(restCfg, ctrl.Options{
		Scheme:                 scheme,
		Logger:                 logger,
		Metrics:                metricsserver.Options{BindAddress: cfg.metricsAddr},
		HealthProbeBindAddress: cfg.healthAddr,
		Cache: cache.Options{
			ByObject: map[client.Object]cache.ByObject{
				&corev1.Node{}: {Field: fields.OneTermEqualSelector("metadata.name", cfg.nodeName)},
			},
		},
		GracefulShutdownTimeout: &gracefulShutdown,
		// One agent per process in a cluster; the tests run several in
		// one process, and controller names are unique per process.
		Controller: ctrlconfig.Controller{SkipNameValidation: &skipNameValidation},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	if cfg.healthAddr != "0" && cfg.healthAddr != "" {
		if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
			return nil, err
		}
		if err := mgr.AddReadyzCheck("cache", func(req *http.Request) error {
			if !mgr.GetCache().WaitForCacheSync(req.Context()) {
				return errors.New("the Node cache has not synced")
			}
			return nil
		}); err != nil {
			return nil, err
		}
	}

	a := &agent{
		client:      mgr.GetClient(),
		nodeName:    cfg.nodeName,
		stateDir:    cfg.stateDir,
		maxAttempts: cfg.maxAttempts,
		applier: &applier{
			root: cfg.root, sourceDir: cfg.sourceDir,
			command: cfg.applyCommand, timeout: cfg.applyTimeout,
			env:  []string{"MACHINA_NODE_NAME=" + cfg.nodeName},
			host: cfg.host(),
		},
		now: time.Now,
	}
	err = ctrl.NewControllerManagedBy(mgr).
		Named("node-agent").
		For(&corev1.Node{}, builder.WithPredicates(inPlaceChanges())).
		Complete(a)
	if err != nil {
		return nil, fmt.Errorf("creating the controller: %w", err)
	}
	// The MachineConfig handshake (docs/machine-config.md) runs beside the
	// in-place one, on the same Node cache; it reads a rendered
	// MachineConfig when it needs one: from the manager's node
	// configuration server, which serves an agent only its own Node's, or
	// straight from the API server.
	var configs client.Reader = mgr.GetAPIReader()
	if cfg.configServer != "" {
		ca, _ := cfg.configServerCAKey() // checked by parseFlags
		if configs, err = nodeconfig.NewClient(cfg.configServer, ca, mgr.GetAPIReader(), restCfg); err != nil {
			return nil, fmt.Errorf("--config-server: %w", err)
		}
	}
	m := machineconfig.New(mgr.GetClient(), configs, machineconfig.Options{
		Root:             cfg.root,
		StateDir:         cfg.stateDir,
		DriftInterval:    cfg.driftInterval,
		RetryInterval:    cfg.retryInterval,
		MaxRetryInterval: cfg.maxRetryInterval,
		RebootTimeout:    cfg.rebootTimeout,
		BootIDFile:       cfg.bootIDFile,
		FIPSFile:         cfg.fipsFile,
		Executor: &machineconfig.Executor{
			Systemctl:       strings.Fields(cfg.systemctl),
			OSUpdateCommand: cfg.osUpdateCommand,
			Timeout:         cfg.actionTimeout,
			Host:            cfg.host(),
		},
	})
	err = ctrl.NewControllerManagedBy(mgr).
		Named("node-agent-machineconfig").
		For(&corev1.Node{}, builder.WithPredicates(inPlaceChanges())).
		Complete(m)
	if err != nil {
		return nil, fmt.Errorf("creating the MachineConfig controller: %w", err)
	}
	return mgr, nil
}

// inPlaceChanges passes the Node's creation (and so the first sync after a
// start, which is how an interrupted attempt is found) and the updates that
// touch the protocol: labels, annotations or the InPlaceUpdate condition.
// The kubelet's status heartbeats pass no reconcile.
func inPlaceChanges() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldNode, ok1 := e.ObjectOld.(*corev1.Node)
			newNode, ok2 := e.ObjectNew.(*corev1.Node)
			if !ok1 || !ok2 {
				return true
			}
			return !reflect.DeepEqual(oldNode.Labels, newNode.Labels) ||
				!reflect.DeepEqual(oldNode.Annotations, newNode.Annotations) ||
				!reflect.DeepEqual(inPlaceCondition(oldNode), inPlaceCondition(newNode))
		},
		DeleteFunc: func(event.DeleteEvent) bool { return false },
	}
}

// inPlaceCondition returns the Node's InPlaceUpdate condition without its
// times, or nil.
func inPlaceCondition(node *corev1.Node) *corev1.NodeCondition {
	for _, c := range node.Status.Conditions {
		if c.Type == v1alpha1.NodeInPlaceUpdate {
			c.LastHeartbeatTime, c.LastTransitionTime = metav1.Time{}, metav1.Time{}
			return &c
		}
	}
	return nil
}

// restConfig returns the configuration of the kubeconfig file given, else
// $KUBECONFIG, else the in-cluster one.
func restConfig(path string) (*rest.Config, error) {
	if path == "" {
		path = os.Getenv(clientcmd.RecommendedConfigPathEnvVar)
	}
	if path != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			return nil, fmt.Errorf("loading kubeconfig %s: %w", path, err)
		}
		return cfg, nil
	}
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("no --kubeconfig, no $KUBECONFIG, and not in a cluster: %w", err)
	}
	return cfg, nil
}
