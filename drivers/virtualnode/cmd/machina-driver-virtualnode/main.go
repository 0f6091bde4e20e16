// Command machina-driver-virtualnode serves the virtualnode driver on the
// Driver API: each VM is a Node it registers in the target cluster and keeps
// Ready with a simulated kubelet heartbeat.
//
// The target cluster is the kubeconfig in a request's secret key
// "kubeconfig" when present, else --target-kubeconfig, else $KUBECONFIG,
// else the in-cluster configuration.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/machina-io/machina/drivers/virtualnode"
	"github.com/machina-io/machina/sdk"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3".
var version = virtualnode.DefaultVersion

func main() {
	// sdk.Main reads this flag's value after the parse below.
	flag.String("endpoint", "",
		"Driver API endpoint, unix:///path.sock or tcp://host:port for development (default from MACHINA_DRIVER_ENDPOINT, else unix:///var/run/machina/driver.sock)")
	kubeconfig := flag.String("target-kubeconfig", "",
		"kubeconfig of the cluster the Nodes are registered in, for requests without a kubeconfig secret (default $KUBECONFIG, else in-cluster)")
	interval := flag.Duration("heartbeat-interval", virtualnode.DefaultHeartbeatInterval, "how often each Node's conditions and Lease are refreshed")
	watch := flag.Bool("watch-nodes", true,
		"watch the driver's Nodes: apply a change of the "+virtualnode.AnnotationSimulate+" annotation at once, not at the next heartbeat, and read Nodes from the watch cache")
	workers := flag.Int("heartbeat-workers", virtualnode.DefaultWorkers, "how many Nodes are refreshed at the same time")
	// The driver stands for one kubelet per Node, each with a client of
	// its own: the limit must not be a single kubelet's.
	qps := flag.Float64("kube-api-qps", virtualnode.DefaultKubeAPIQPS,
		"requests per second to each target cluster, for all simulated kubelets together (negative: no limit)")
	burst := flag.Int("kube-api-burst", virtualnode.DefaultKubeAPIBurst, "request burst to each target cluster")
	var level slog.Level
	flag.TextVar(&level, "log-level", slog.LevelInfo, "log level: DEBUG, INFO, WARN or ERROR")
	showVersion := flag.Bool("version", false, "print the version and exit")
	providers := flag.String("providers", strings.Join(virtualnode.DefaultProviders, ","),
		"comma-separated MachineClass provider values the driver serves (a manager with several drivers routes by them)")
	flag.Parse()
	if *showVersion {
		fmt.Println(virtualnode.Name, version)
		return
	}
	if flag.NArg() > 0 {
		fail(fmt.Errorf("unexpected arguments: %q", flag.Args()), 2)
	}
	switch {
	case *interval <= 0:
		fail(errors.New("--heartbeat-interval must be positive"), 2)
	case *workers <= 0:
		fail(errors.New("--heartbeat-workers must be positive"), 2)
	case *qps == 0:
		fail(errors.New("--kube-api-qps must not be 0 (a negative value turns the limit off)"), 2)
	case *burst <= 0:
		fail(errors.New("--kube-api-burst must be positive"), 2)
	}

	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	target, err := targetConfig(*kubeconfig)
	if err != nil {
		fail(err, 1)
	}
	if target == nil {
		logger.Warn("no target cluster configured: every request must carry a kubeconfig secret")
	}
	d := virtualnode.New(virtualnode.Options{
		Target:            target,
		HeartbeatInterval: *interval,
		WatchNodes:        *watch,
		Workers:           *workers,
		KubeAPIQPS:        float32(*qps),
		KubeAPIBurst:      *burst,
		Logger:            logger,
	})

	ctx, stop := context.WithCancel(context.Background())
	heartbeats := make(chan error, 1)
	go func() { heartbeats <- d.Run(ctx) }()
	// sdk.Main serves on --endpoint and returns after a graceful stop on
	// SIGTERM or SIGINT.
	sdk.Main(virtualnode.Info(version), d, sdk.WithLogger(logger), sdk.WithProviders(strings.Split(*providers, ",")...))
	stop()
	if err := <-heartbeats; err != nil {
		fail(err, 1)
	}
}

// targetConfig returns the default target cluster: the kubeconfig file
// given, else $KUBECONFIG, else the in-cluster configuration, else nil.
func targetConfig(path string) (*rest.Config, error) {
	if path == "" {
		path = os.Getenv(clientcmd.RecommendedConfigPathEnvVar)
	}
	if path != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			return nil, fmt.Errorf("loading the target kubeconfig %s: %w", path, err)
		}
		return cfg, nil
	}
	cfg, err := rest.InClusterConfig()
	if errors.Is(err, rest.ErrNotInCluster) {
		return nil, nil
	}
	return cfg, err
}

func fail(err error, code int) {
	fmt.Fprintf(os.Stderr, "machina-driver-virtualnode: %v\n", err)
	os.Exit(code)
}
