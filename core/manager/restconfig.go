package manager

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/flowcontrol"
)

// userAgent identifies the manager's requests in API server logs and audit.
const userAgent = "machina-manager"

// clusterConfigs are the REST configurations New builds.
type clusterConfigs struct {
	// control reaches the control cluster; its rate limiter is shared by
	// every client of the manager.
	control *rest.Config
	// leaderElection reaches the control cluster for the Lease only, with a
	// limiter of its own: a renewal must never queue behind a burst of
	// controller writes, or the leader would lose its lease under load.
	leaderElection *rest.Config
	// target reaches the target cluster (nil without one), with its own
	// limiter, as MCM has one client per cluster.
	target *rest.Config
	// probes are the API servers the safety check probes, without the
	// shared limiter: a probe must not wait behind controller writes, or a
	// busy manager would take its own throttling for an outage. The target
	// cluster is probed only when it is another cluster.
	probes []namedConfig
}

// namedConfig is a cluster's configuration with a name for logs.
type namedConfig struct {
	name   string
	config *rest.Config
}

// loadConfigs reads the kubeconfigs (or takes the given configs) and puts
// the QPS and burst limits on them.
func (o *Options) loadConfigs() (*clusterConfigs, error) {
	control, err := o.baseControlConfig()
	if err != nil {
		return nil, fmt.Errorf("control cluster: %w", err)
	}
	probes := []namedConfig{{name: "control", config: withUserAgent(control, "/safety")}}
	var target *rest.Config
	if o.hasTarget() {
		switch {
		case o.TargetConfig != nil:
			target = rest.CopyConfig(o.TargetConfig)
		case o.TargetKubeconfig == "":
			target = rest.CopyConfig(control)
		default:
			if target, err = clientcmd.BuildConfigFromFlags("", o.TargetKubeconfig); err != nil {
				return nil, fmt.Errorf("target cluster: --target-kubeconfig %s: %w", o.TargetKubeconfig, err)
			}
		}
	}

	if target != nil && (o.TargetConfig != nil || o.TargetKubeconfig != "") {
		probes = append(probes, namedConfig{name: "target", config: withUserAgent(target, "/safety")})
	}

	leaderElection := rest.CopyConfig(control)
	leaderElection.UserAgent = userAgent + "/leader-election"
	limit(control, o.KubeAPIQPS, o.KubeAPIBurst)
	if target != nil {
		limit(target, o.KubeAPIQPS, o.KubeAPIBurst)
	}
	return &clusterConfigs{control: control, leaderElection: leaderElection, target: target, probes: probes}, nil
}

// withUserAgent returns a copy of cfg with the manager's user agent plus
// suffix.
func withUserAgent(cfg *rest.Config, suffix string) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.UserAgent = userAgent + suffix
	return c
}

// baseControlConfig returns the control cluster's configuration before
// limits are applied.
func (o *Options) baseControlConfig() (*rest.Config, error) {
	switch {
	case o.ControlConfig != nil:
		return rest.CopyConfig(o.ControlConfig), nil
	case o.ControlKubeconfig == "" || o.ControlKubeconfig == InClusterKubeconfig:
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("in-cluster configuration (set --control-kubeconfig outside a pod): %w", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", o.ControlKubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--control-kubeconfig %s: %w", o.ControlKubeconfig, err)
	}
	return cfg, nil
}

// limit sets QPS and burst and one token bucket for every client made from
// cfg. Without a shared limiter client-go gives each REST client (one per
// resource type in controller-runtime) a bucket of its own, and the flags
// would bound nothing in total.
func limit(cfg *rest.Config, qps float32, burst int) {
	cfg.QPS = qps
	cfg.Burst = burst
	cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(qps, burst)
	cfg.UserAgent = userAgent
}
