package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/machina-io/machina/core/testenv"
)

// binary is a main package of the repository, built from its own module
// directory so that the build sees the same go.work as `make build`.
type binary struct{ name, module, pkg string }

var (
	managerBinary     = binary{"machina-manager", "cmd", "./machina-manager"}
	virtualnodeBinary = binary{"machina-driver-virtualnode", "drivers/virtualnode", "./cmd/machina-driver-virtualnode"}
	inmemoryBinary    = binary{"machina-driver-inmemory", "drivers/inmemory", "./cmd/machina-driver-inmemory"}
)

// build builds the manager and both drivers into cfg.BinDir, concurrently.
func build(ctx context.Context, cfg Config) error {
	bins := []binary{managerBinary, virtualnodeBinary, inmemoryBinary}
	errs := make([]error, len(bins))
	var wg sync.WaitGroup
	for i, b := range bins {
		wg.Go(func() {
			cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(cfg.BinDir, b.name), b.pkg)
			cmd.Dir = filepath.Join(cfg.Root, b.module)
			if out, err := cmd.CombinedOutput(); err != nil {
				errs[i] = fmt.Errorf("go build %s (in %s): %w\n%s", b.pkg, b.module, err, out)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// suite is one run: the control plane, the two fleets and what they share.
type suite struct {
	cfg    Config
	out    io.Writer
	rng    *rand.Rand
	cp     *controlPlane
	c      client.WithWatch
	failed *failedWatch
	forms  [][]byte
	fleets []*fleet
	report *Report
}

// Run runs the suite: it builds the binaries, starts the control plane and
// both fleets, plays every phase of every round, and stops everything. It
// prints progress and the results table to out. The returned error is a
// failure to run at all; what the phases found is in the report.
func Run(ctx context.Context, cfg Config, out io.Writer) (report *Report, err error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if cfg.Seed == 0 {
		cfg.Seed = time.Now().UnixNano()
	}
	fmt.Fprintf(out, "chaos: seed %d (replay with -chaos.seed=%d); %d round(s), %d + %d machines, %d manager kill(s) per phase, %s API server outage, %.0f%% driver faults\n",
		cfg.Seed, cfg.Seed, cfg.Rounds, cfg.Machines, cfg.FaultMachines, cfg.ManagerKills, cfg.Outage, 100*cfg.FaultRate)
	fmt.Fprintf(out, "chaos: logs in %s\n", cfg.LogDir)
	for _, d := range []string{cfg.BinDir, cfg.WorkDir, cfg.LogDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	// The suite's own clients log nothing: what matters is in the table.
	ctrllog.SetLogger(logr.Discard())
	s := &suite{cfg: cfg, out: out, rng: rand.New(rand.NewPCG(uint64(cfg.Seed), 0)), report: &Report{Seed: cfg.Seed}}

	built := make(chan error, 1)
	go func() { built <- build(ctx, cfg) }()
	cp, err := startControlPlane(cfg.WorkDir, cfg.LogDir, cfg.Assets)
	if berr := <-built; berr != nil {
		if cp != nil {
			berr = errors.Join(berr, cp.stop())
		}
		return nil, errors.Join(berr, err)
	}
	if err != nil {
		return nil, err
	}
	s.cp = cp
	defer func() {
		for _, f := range s.fleets {
			err = errors.Join(err, f.stop())
		}
		err = errors.Join(err, cp.stop())
	}()

	scheme, err := testenv.NewScheme()
	if err != nil {
		return nil, err
	}
	if s.c, err = client.NewWithWatch(cp.admin, client.Options{Scheme: scheme}); err != nil {
		return nil, err
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	s.failed = watchFailed(watchCtx, s.c)
	canary := newCanary()
	s.forms = canaryForms(canary)

	vn, err := s.startFleet(ctx, &fleet{
		name: "virtualnode", namespace: "chaos-virtualnode", provider: "virtualnode",
		classes: [2]string{"vn-a", "vn-b"},
		specs: map[string]string{
			"vn-a": `{"bootDelay":"1s","capacity":{"cpu":"2","memory":"4Gi","pods":"110"}}`,
			"vn-b": `{"bootDelay":"1s","capacity":{"cpu":"4","memory":"8Gi","pods":"110"}}`,
		},
		hasNodes: true, healthy: "Running",
	}, canary)
	if err != nil {
		return nil, err
	}
	mem, err := s.startFleet(ctx, &fleet{
		name: "inmemory", namespace: "chaos-inmemory", provider: "inmemory",
		classes: [2]string{"mem-a", "mem-b"},
		specs: map[string]string{
			"mem-a": `{"capacity":{"cpu":"2","memory":"4Gi"}}`,
			"mem-b": `{"capacity":{"cpu":"4","memory":"8Gi"}}`,
		},
		healthy: "Available",
	}, canary)
	if err != nil {
		return nil, err
	}

	if err := s.selfCheck(ctx, vn); err != nil {
		return nil, err
	}
	fmt.Fprintln(out, "chaos: self-check ok: a VM created behind the manager's back counted as 1 leak, its Node as 1 orphan")
	for round := 1; round <= cfg.Rounds; round++ {
		if err := s.round(ctx, round, vn, mem); err != nil {
			s.report.print(out)
			return s.report, err
		}
	}
	s.report.print(out)
	return s.report, nil
}

// startFleet starts the fleet's driver, creates its namespace, starts its
// manager, waits until the manager is ready, and creates the fleet's
// objects.
func (s *suite) startFleet(ctx context.Context, f *fleet, canary string) (*fleet, error) {
	var err error
	if f.socket, err = socketPath(f.name); err != nil {
		return nil, err
	}
	driverArgs := []string{"--endpoint=unix://" + f.socket}
	target := "none"
	bin := inmemoryBinary
	if f.provider == "virtualnode" {
		bin, target = virtualnodeBinary, s.cp.kubeconfig
		driverArgs = append(driverArgs, "--target-kubeconfig="+s.cp.kubeconfig)
	} else {
		seed := s.rng.Int64()
		rate := s.cfg.FaultRate
		driverArgs = append(driverArgs,
			"--state-file="+filepath.Join(s.cfg.WorkDir, f.name+"-vms.json"),
			fmt.Sprintf("--fault=*:code=UNAVAILABLE,rate=%g,seed=%d;CreateMachine:code=UNAVAILABLE,rate=%g,seed=%d,after;DeleteMachine:code=DEADLINE_EXCEEDED,rate=%g,seed=%d,after",
				rate, seed, rate, seed+1, rate, seed+2))
	}
	if f.driver, err = startComponent(bin.name, filepath.Join(s.cfg.BinDir, bin.name), filepath.Join(s.cfg.LogDir, f.name+"-driver.log"), driverArgs...); err != nil {
		return nil, err
	}
	s.fleets = append(s.fleets, f)
	if err := s.wait(ctx, time.Minute, f.name+" driver's socket", func(context.Context) (bool, string, error) {
		_, err := os.Stat(f.socket)
		return err == nil, fmt.Sprint(err), nil
	}); err != nil {
		return nil, err
	}
	if err := f.connect(); err != nil {
		return nil, err
	}
	if f.healthAddr, err = freeAddress(); err != nil {
		return nil, err
	}
	// The manager refuses to start without its namespace.
	if err := s.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.namespace}}); err != nil {
		return nil, err
	}
	args := append([]string{
		"--control-kubeconfig=" + s.cp.kubeconfig,
		"--target-kubeconfig=" + target,
		"--namespace=" + f.namespace,
		"--driver-endpoint=unix://" + f.socket,
		// Two managers run side by side: ports of their own.
		"--metrics-bind-address=0",
		"--health-probe-bind-address=" + f.healthAddr,
	}, s.cfg.ManagerArgs...)
	if f.manager, err = startComponent(managerBinary.name, filepath.Join(s.cfg.BinDir, managerBinary.name), filepath.Join(s.cfg.LogDir, f.name+"-manager.log"), args...); err != nil {
		return nil, err
	}
	if err := s.waitReady(ctx, f); err != nil {
		return nil, err
	}
	if err := f.createObjects(ctx, s.c, canary); err != nil {
		return nil, err
	}
	return f, nil
}

// waitReady waits until the fleet's manager answers /readyz with 200.
func (s *suite) waitReady(ctx context.Context, f *fleet) error {
	httpClient := &http.Client{Timeout: 2 * time.Second}
	url := "http://" + f.healthAddr + "/readyz"
	return s.wait(ctx, 2*time.Minute, f.name+" manager's "+url, func(ctx context.Context) (bool, string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, "", err
		}
		if exits, _ := f.manager.counts(); exits > 0 {
			return false, "", fatal{fmt.Errorf("the manager exited; last lines of %s:\n%s", f.manager.logPath, f.manager.tail(20))}
		}
		resp, err := httpClient.Do(req)
		if err != nil {
			return false, "no answer", err
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status, nil
	})
}

// wait polls cond every half second until it holds or timeout passes.
func (s *suite) wait(ctx context.Context, timeout time.Duration, what string, cond func(context.Context) (bool, string, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		readCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		done, state, err := cond(readCtx)
		cancel()
		if done && err == nil {
			return nil
		}
		if errors.As(err, new(fatal)) {
			return fmt.Errorf("%s: %w", what, err)
		}
		if time.Now().After(deadline) {
			if err != nil {
				state = fmt.Sprintf("%s (last error: %v)", state, err)
			}
			return fmt.Errorf("%s: not reached within %s; last seen: %s", what, timeout, state)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// fatal is an error that ends a wait at once.
type fatal struct{ error }

// stop stops the fleet's manager, then its driver.
func (f *fleet) stop() error {
	var err error
	if f.manager != nil {
		err = f.manager.stop(30 * time.Second)
	}
	if f.driver != nil {
		err = errors.Join(err, f.driver.stop(30*time.Second))
	}
	if f.conn != nil {
		_ = f.conn.Close()
	}
	if f.socket != "" {
		_ = os.RemoveAll(filepath.Dir(f.socket))
	}
	return err
}
