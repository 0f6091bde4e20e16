package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/internal/process"
)

// Names of the binaries the demo runs, in --bin.
const (
	managerBinary = "machina-manager"
	driverBinary  = "machina-driver-virtualnode"
)

// pollInterval is how often the demo reads the cluster's state.
const pollInterval = 300 * time.Millisecond

// demo is one run: what it started, so that cleanup can stop it.
type demo struct {
	cfg    config
	screen *screen

	workDir string
	logDir  string
	cp      *controlPlane
	client  client.Client
	driver  *process.Process
	manager *process.Process
	// agents are the node agents of the pool step, one per node.
	agents []nodeAgent
	// managerHealth and managerMetrics are the manager's HTTP addresses.
	managerHealth  string
	managerMetrics string
	// managerNodeConfig is the address of its node configuration server.
	managerNodeConfig string
	// kubeconfig is an admin kubeconfig for the user, namespace preset.
	kubeconfig string
}

// run starts everything and plays the scenario. It returns when the
// scenario is done (or, with --keep, when ctx is cancelled), or on the
// first failure.
func (d *demo) run(ctx context.Context) error {
	binaries := []string{managerBinary, driverBinary, agentBinary}
	if d.cfg.local() {
		binaries = binaries[:1]
	}
	for _, b := range binaries {
		if _, err := os.Stat(filepath.Join(d.cfg.bin, b)); err != nil {
			return fmt.Errorf("%w (build it with `make build` or run `make demo`)", err)
		}
	}
	// A socket that is not there is the commonest first mistake of a
	// driver author: say so before starting anything.
	if err := d.waitDriverEndpoint(ctx); err != nil {
		return err
	}
	var err error
	if d.workDir, err = newWorkDir(); err != nil {
		return fmt.Errorf("creating the work directory: %w", err)
	}
	d.logDir = d.cfg.logDir
	if d.logDir == "" {
		d.logDir = d.workDir
	} else if err := os.MkdirAll(d.logDir, 0o755); err != nil {
		return err
	}

	if err := d.startCluster(); err != nil {
		return err
	}
	if d.cfg.local() {
		return d.runLocal(ctx)
	}
	if err := d.startProcesses(ctx); err != nil {
		return err
	}
	return d.scenario(ctx)
}

// startCluster starts the control plane and installs the manager's
// ServiceAccount and RBAC.
func (d *demo) startCluster() error {
	d.screen.Message("Starting etcd and kube-apiserver with the machine.sapcloud.io CRDs")
	cp, err := startControlPlane(d.workDir, d.cfg.assets, filepath.Join(d.cfg.repo, "deploy", "crds"))
	if err != nil {
		return err
	}
	d.cp = cp
	scheme, err := demoScheme()
	if err != nil {
		return err
	}
	if d.client, err = client.New(cp.cfg, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	if d.kubeconfig, err = userKubeconfig(cp, d.workDir); err != nil {
		return err
	}
	// The kubeconfig comes first, so that a run that fails later can still
	// be looked at while it runs.
	d.screen.Message("API server at %s; export KUBECONFIG=%s", cp.cfg.Host, d.kubeconfig)
	return nil
}

// startProcesses starts the driver and the manager as the ServiceAccount of
// deploy/overlays/virtualnode and waits until the manager is ready (its
// readiness includes the driver's Probe).
func (d *demo) startProcesses(ctx context.Context) error {
	overlay := filepath.Join(d.cfg.repo, "deploy", "overlays", "virtualnode")
	d.screen.Message("Installing ServiceAccount %s/%s and the RBAC of deploy/overlays/virtualnode", namespace, serviceAccount)
	saKubeconfig, err := installIdentity(ctx, d.cp.cfg, d.client, overlay, d.workDir, managerIdentity)
	if err != nil {
		return err
	}
	// The node agents' too: the manager publishes its node configuration
	// server's certificate in their namespace.
	d.screen.Message("Installing ServiceAccount %s/%s, the RBAC and the DaemonSet of deploy/node-agent",
		agentIdentity.namespace, agentIdentity.name)
	if err := installKinds(ctx, d.client, filepath.Join(d.cfg.repo, "deploy", "node-agent"), append(rbacKinds, "DaemonSet")...); err != nil {
		return err
	}

	endpoint := "unix://" + filepath.Join(d.workDir, "driver.sock")
	d.screen.Message("Starting %s on %s", driverBinary, endpoint)
	d.driver, err = startChild(driverBinary, filepath.Join(d.cfg.bin, driverBinary), filepath.Join(d.logDir, "driver.log"),
		"--endpoint="+endpoint,
		"--target-kubeconfig="+saKubeconfig,
		// Nodes refresh their conditions often enough for a demo to look
		// alive; a real kubelet reports every 10s as well.
		"--heartbeat-interval=10s",
	)
	if err != nil {
		return err
	}

	if d.managerHealth, err = freeAddress(); err != nil {
		return err
	}
	if d.managerMetrics, err = freeAddress(); err != nil {
		return err
	}
	if d.managerNodeConfig, err = freeAddress(); err != nil {
		return err
	}
	d.screen.Message("Starting %s (namespace %s, as ServiceAccount %s)", managerBinary, namespace, serviceAccount)
	d.manager, err = startChild(managerBinary, filepath.Join(d.cfg.bin, managerBinary), filepath.Join(d.logDir, "manager.log"),
		"--control-kubeconfig="+saKubeconfig,
		"--target-kubeconfig="+saKubeconfig,
		"--namespace="+namespace,
		"--driver-endpoint="+endpoint,
		"--leader-elect=false",
		// Short enough to watch a simulated failure (--keep) end in a
		// replacement; the default is MCM's 10m.
		"--machine-health-timeout=1m",
		"--health-probe-bind-address="+d.managerHealth,
		"--metrics-bind-address="+d.managerMetrics,
		// Local: plain HTTP, no token needed to look at the metrics.
		"--metrics-secure=false",
		// The node agents' configurations (the pool step's agents).
		"--node-config-bind-address="+d.managerNodeConfig,
		"--node-config-names=127.0.0.1",
	)
	if err != nil {
		return err
	}
	if err := d.waitReady(ctx); err != nil {
		return err
	}
	d.screen.Message("Manager ready: health http://%s/readyz, metrics http://%s/metrics", d.managerHealth, d.managerMetrics)
	return nil
}

// waitReady waits until the manager answers 200 on /readyz, failing when
// the manager or the driver exits.
func (d *demo) waitReady(ctx context.Context) error {
	return process.WaitHTTP(ctx, "http://"+d.managerHealth+"/readyz", d.cfg.timeout, pollInterval, d.manager, d.driver)
}

// checkChildren fails when the manager, the driver or a node agent has
// exited.
func (d *demo) checkChildren() error {
	children := []*process.Process{d.driver, d.manager}
	for _, a := range d.agents {
		children = append(children, a.proc)
	}
	for _, c := range children {
		if c != nil && !c.Running() {
			return c.ExitError(25)
		}
	}
	return nil
}

// cleanup stops what run started, in reverse order, and removes the work
// directory. It is safe after a partial start.
func (d *demo) cleanup() error {
	var errs []error
	if len(d.agents) > 0 {
		fmt.Println("Stopping the node agents")
	}
	if d.manager != nil || d.driver != nil || d.cp != nil {
		fmt.Println("Stopping the manager, the driver, kube-apiserver and etcd")
	}
	// The agents first: they only follow their Nodes. Then the manager,
	// so that it does not see its driver vanish.
	errs = append(errs, d.stopAgents())
	if d.manager != nil {
		errs = append(errs, d.manager.Stop(20*time.Second))
	}
	if d.driver != nil {
		errs = append(errs, d.driver.Stop(10*time.Second))
	}
	if d.cp != nil {
		errs = append(errs, d.cp.stop())
	}
	errs = append(errs, d.removeFiles())
	if d.cfg.logDir != "" {
		fmt.Printf("Logs are in %s\n", d.cfg.logDir)
	}
	return errors.Join(errs...)
}

// demoScheme knows the built-in types, machine.sapcloud.io/v1alpha1 and
// machineconfiguration.openshift.io/v1.
func demoScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := mcv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return scheme, v1alpha1.AddToScheme(scheme)
}

// removeFiles removes the work directory.
func (d *demo) removeFiles() error {
	if d.workDir == "" {
		return nil
	}
	return os.RemoveAll(d.workDir)
}

// userKubeconfig writes an admin kubeconfig whose context defaults to the
// demo's namespace, for the user's kubectl.
func userKubeconfig(cp *controlPlane, dir string) (string, error) {
	kc, err := clientcmd.Load(cp.env.KubeConfig)
	if err != nil {
		return "", err
	}
	for _, c := range kc.Contexts {
		c.Namespace = namespace
	}
	path := filepath.Join(dir, "demo.kubeconfig")
	return path, clientcmd.WriteToFile(*kc, path)
}

// freeAddress returns a loopback address with a port that is free now.
func freeAddress() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port), nil
}

// sleep waits for d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
