package main

import (
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	machinaio "github.com/machina-io/machina/core/api/machina/v1alpha1"
	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// scheme knows the built-in types, machine.sapcloud.io/v1alpha1 and
// machina.io/v1alpha1.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := machinaio.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

// targetFlags choose the cluster that holds the Nodes, Pods and volumes, when
// it is not the one that holds the machines (the manager's
// --target-kubeconfig).
type targetFlags struct {
	kubeconfig string
	context    string
}

func (t *targetFlags) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&t.kubeconfig, "target-kubeconfig", "", "kubeconfig of the cluster that holds the Nodes and Pods, when it is not the one of the machines (as the manager's --target-kubeconfig)")
	fs.StringVar(&t.context, "target-context", "", "context of --target-kubeconfig to use")
}

// clients reach the control cluster (machines) and the target cluster
// (Nodes, Pods, PodDisruptionBudgets, volumes); they are the same cluster
// unless --target-kubeconfig is given.
type clients struct {
	// control reads and writes machina's objects and their Events.
	control client.Client
	// target reads Nodes, Pods and what blocks a drain.
	target client.Client
	// targetSet is target as a clientset, for kubectl's drain filters.
	targetSet kubernetes.Interface
	// namespace is the namespace of the machines: -n, else the context's.
	namespace string
}

func (o *options) clients() (*clients, error) {
	cfg, err := o.config.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	ns, _, err := o.config.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, err
	}
	control, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("connecting to the cluster of the machines: %w", err)
	}
	targetCfg := cfg
	if o.target.kubeconfig != "" {
		targetCfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
			&clientcmd.ClientConfigLoadingRules{ExplicitPath: o.target.kubeconfig},
			&clientcmd.ConfigOverrides{CurrentContext: o.target.context},
		).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("reading --target-kubeconfig: %w", err)
		}
	}
	target, err := client.New(targetCfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("connecting to the target cluster: %w", err)
	}
	targetSet, err := kubernetes.NewForConfig(rest.CopyConfig(targetCfg))
	if err != nil {
		return nil, fmt.Errorf("connecting to the target cluster: %w", err)
	}
	return &clients{control: control, target: target, targetSet: targetSet, namespace: ns}, nil
}
