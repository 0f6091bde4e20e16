package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/bench/internal/procstat"
	"github.com/machina-io/machina/internal/process"
)

// bench is one run: what it started, for the scenarios and for cleanup.
type bench struct {
	cfg     *config
	workDir string

	cp                    *controlPlane
	apiserverPID, etcdPID int
	client                client.Client
	tracker               *tracker
	driver, manager       *process.Process
	// managerMetrics is the address of the manager's metrics server.
	managerMetrics string
}

// run runs every part not skipped, adding the results to res as they come.
func run(ctx context.Context, cfg *config, res *Results) (err error) {
	b := &bench{cfg: cfg}
	if b.workDir = cfg.workDir; b.workDir == "" {
		// Short: the driver's socket lives here (108-byte limit).
		if b.workDir, err = os.MkdirTemp("", "mbench"); err != nil {
			return err
		}
	} else if err := os.MkdirAll(b.workDir, 0o700); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, b.cleanup()) }()
	fmt.Printf("work directory: %s\n", b.workDir)

	if !cfg.skip["driver"] {
		fmt.Printf("driver call benchmarks: go test -bench %s (benchtime %s)\n", driverBenchPackage, cfg.driverBenchtime)
		d, err := runDriverBench(ctx, cfg.repo, cfg.driverBenchtime, filepath.Join(b.workDir, "driver-bench.log"))
		if err != nil {
			res.Errors = append(res.Errors, err.Error())
		}
		res.DriverCalls = d
	}
	if cfg.skip["ceiling"] && cfg.skip["scale"] && cfg.skip["roll"] && cfg.skip["inplace"] && cfg.skip["pool"] && cfg.fleet == 0 {
		return nil
	}

	if cfg.assets == "" {
		return errors.New("no control plane binaries: set KUBEBUILDER_ASSETS or --assets (hack/envtest-assets.sh prints the directory)")
	}
	fmt.Println("starting etcd and kube-apiserver")
	if b.cp, err = startControlPlane(b.workDir, cfg.assets, filepath.Join(cfg.repo, "deploy", "crds"), cfg.apiServerVerbosity); err != nil {
		return err
	}
	if b.apiserverPID, err = procstat.Child(os.Getpid(), "kube-apiserver"); err != nil {
		return err
	}
	if b.etcdPID, err = procstat.Child(os.Getpid(), "etcd"); err != nil {
		return err
	}
	scheme, err := benchScheme()
	if err != nil {
		return err
	}
	// The harness's own client: its few writes must not wait on a rate
	// limiter, and it is not audited.
	harness := rest.CopyConfig(b.cp.admin)
	harness.QPS, harness.Burst = 100, 200
	if b.client, err = client.New(harness, client.Options{Scheme: scheme}); err != nil {
		return err
	}

	if !cfg.skip["ceiling"] {
		fmt.Println("API server write ceiling")
		c, err := measureCeiling(ctx, b.cp.admin, scheme, cfg.ceilingObjects, cfg.ceilingConcurrency)
		res.Ceiling = c
		if err != nil {
			return fmt.Errorf("API server ceiling: %w", err)
		}
	}
	if cfg.skip["scale"] && cfg.skip["roll"] && cfg.skip["inplace"] && cfg.skip["pool"] && cfg.fleet == 0 {
		return nil
	}

	trackerCtx, stopTracker := context.WithCancel(ctx)
	defer stopTracker()
	if b.tracker, err = startTracker(trackerCtx, b.cp, scheme); err != nil {
		return err
	}
	if err := createBase(ctx, b.client, cfg.bootDelay, classA, classB); err != nil {
		return err
	}
	if err := b.startProcesses(ctx); err != nil {
		return err
	}
	if !cfg.skip["scale"] {
		res.Scenarios = append(res.Scenarios, b.scenarioScaleUp(ctx, cfg.machines))
		res.Scenarios = append(res.Scenarios, b.scenarioScaleDown(ctx, cfg.machines))
		if err := b.checkChildren(); err != nil {
			return err
		}
	}
	if cfg.fleet > 0 {
		res.Scenarios = append(res.Scenarios, b.scenarioFleet(ctx, cfg.fleet)...)
		if err := b.checkChildren(); err != nil {
			return err
		}
	}
	if !cfg.skip["roll"] {
		res.Scenarios = append(res.Scenarios, b.scenarioRoll(ctx, cfg.rollMachines, cfg.rollSurge)...)
		if err := b.checkChildren(); err != nil {
			return err
		}
	}
	// Last: its machines stay (the run ends with them), and the scenarios
	// before count every Node of the cluster as theirs.
	if !cfg.skip["inplace"] {
		res.Scenarios = append(res.Scenarios, b.scenarioInPlace(ctx, cfg.inPlaceMachines, cfg.inPlaceUnavailable))
		if err := b.checkChildren(); err != nil {
			return err
		}
	}
	// Its machines stay too; its own deployment and class keep its
	// figures apart from the in-place rollout's.
	if !cfg.skip["pool"] {
		res.Scenarios = append(res.Scenarios, b.scenarioPool(ctx, cfg.poolMachines, cfg.poolUnavailable))
	}
	return b.checkChildren()
}

// startProcesses starts the virtualnode driver and the manager, each as
// its own API user, and waits until the manager is ready (its readiness
// includes the driver's Probe).
func (b *bench) startProcesses(ctx context.Context) error {
	for _, name := range []string{managerBinary, driverBinary} {
		if _, err := os.Stat(filepath.Join(b.cfg.bin, name)); err != nil {
			return fmt.Errorf("%w (hack/bench.sh builds it)", err)
		}
	}
	endpoint := "unix://" + filepath.Join(b.workDir, "driver.sock")
	var err error
	b.driver, err = startChild(driverBinary, filepath.Join(b.cfg.bin, driverBinary), filepath.Join(b.workDir, "driver.log"),
		"--endpoint="+endpoint,
		"--target-kubeconfig="+b.cp.driverKubeconfig,
		"--heartbeat-interval="+b.cfg.heartbeat.String(),
	)
	if err != nil {
		return err
	}
	health, err := freeAddress()
	if err != nil {
		return err
	}
	if b.managerMetrics, err = freeAddress(); err != nil {
		return err
	}
	args := []string{
		"--control-kubeconfig=" + b.cp.managerKubeconfig,
		"--target-kubeconfig=" + b.cp.managerKubeconfig,
		"--namespace=" + benchNamespace,
		"--driver-endpoint=" + endpoint,
		"--leader-elect=false",
		"--health-probe-bind-address=" + health,
		"--metrics-bind-address=" + b.managerMetrics,
		"--metrics-secure=false", // scraped locally over plain HTTP
	}
	args = append(args, b.cfg.managerArgs...)
	if b.manager, err = startChild(managerBinary, filepath.Join(b.cfg.bin, managerBinary), filepath.Join(b.workDir, "manager.log"), args...); err != nil {
		return err
	}
	fmt.Printf("manager and driver started; logs in %s\n", b.workDir)
	return process.WaitHTTP(ctx, "http://"+health+"/readyz", 2*time.Minute, 200*time.Millisecond, b.manager)
}

// checkChildren fails when the manager or the driver has exited.
func (b *bench) checkChildren() error {
	for _, c := range []*process.Process{b.driver, b.manager} {
		if c != nil && !c.Running() {
			return c.ExitError(20)
		}
	}
	return nil
}

// cleanup stops what run started, in reverse order.
func (b *bench) cleanup() error {
	var errs []error
	if b.manager != nil {
		errs = append(errs, b.manager.Stop(20*time.Second))
	}
	if b.driver != nil {
		errs = append(errs, b.driver.Stop(10*time.Second))
	}
	if b.cp != nil {
		errs = append(errs, b.cp.stop())
	}
	if b.cfg.workDir == "" && !b.cfg.keepWorkDir {
		errs = append(errs, os.RemoveAll(b.workDir))
	} else {
		fmt.Printf("logs and audit log kept in %s\n", b.workDir)
	}
	return errors.Join(errs...)
}
