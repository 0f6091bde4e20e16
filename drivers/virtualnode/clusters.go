package virtualnode

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// defaultClusterKey is the cache key of Options.Target.
const defaultClusterKey = "default"

// cluster is one target cluster the driver has Nodes in.
type cluster struct {
	key    string
	client kubernetes.Interface
}

// clusters caches one client per target cluster, keyed by the SHA-256 of
// the kubeconfig it was built from, so that a request does not build a new
// client (and open new connections) every time.
type clusters struct {
	target *rest.Config
	// qps and burst limit each cluster's client (Options.KubeAPIQPS and
	// KubeAPIBurst); a negative qps means no limit.
	qps   float32
	burst int
	// added is called with every cluster that enters the cache, to start
	// heartbeats for its Nodes.
	added func(*cluster)

	mu    sync.Mutex
	byKey map[string]*cluster
}

func newClusters(target *rest.Config, qps float32, burst int, added func(*cluster)) *clusters {
	return &clusters{target: target, qps: qps, burst: burst, added: added, byKey: map[string]*cluster{}}
}

// forSecrets returns the cluster of a request: the one of its "kubeconfig"
// secret when present, else the default target.
func (c *clusters) forSecrets(secrets map[string][]byte) (*cluster, error) {
	if kubeconfig, ok := secrets[SecretKubeconfig]; ok {
		sum := sha256.Sum256(kubeconfig)
		return c.get(hex.EncodeToString(sum[:]), func() (*rest.Config, error) {
			cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
			if err != nil {
				// The parser's error may quote the file: say only what is wrong.
				return nil, status.Error(codes.InvalidArgument, "secrets[kubeconfig] is not a valid kubeconfig")
			}
			return cfg, nil
		})
	}
	return c.defaultCluster()
}

// defaultCluster returns the cluster of Options.Target.
func (c *clusters) defaultCluster() (*cluster, error) {
	return c.get(defaultClusterKey, func() (*rest.Config, error) {
		if c.target == nil {
			return nil, status.Error(codes.FailedPrecondition,
				"no target cluster: the request has no secret key kubeconfig and the driver has no target kubeconfig")
		}
		return rest.CopyConfig(c.target), nil
	})
}

func (c *clusters) get(key string, config func() (*rest.Config, error)) (*cluster, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.byKey[key]; ok {
		return cl, nil
	}
	cfg, err := config()
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = c.qps, c.burst
	cfg.UserAgent = "machina-driver-virtualnode"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "building a client for the target cluster: %v", err)
	}
	cl := &cluster{key: key, client: client}
	c.byKey[key] = cl
	if c.added != nil {
		c.added(cl)
	}
	return cl, nil
}

// all returns every cached cluster.
func (c *clusters) all() []*cluster {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*cluster, 0, len(c.byKey))
	for _, cl := range c.byKey {
		out = append(out, cl)
	}
	return out
}
