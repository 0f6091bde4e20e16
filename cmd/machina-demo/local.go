package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/internal/process"
)

// This file is the demo's local cluster for any driver (--driver or
// --driver-endpoint): the control plane, the CRDs, the namespace and the
// manager's ServiceAccount as `make demo` sets them up, the manager against
// the given driver, optionally a MachineClass and a MachineDeployment, and
// then everything keeps running until Ctrl-C.

// driverEndpointEnv is how a driver learns its socket (the SDK's
// MACHINA_DRIVER_ENDPOINT, which deploy/ sets too).
const driverEndpointEnv = "MACHINA_DRIVER_ENDPOINT"

// localName names the MachineClass and MachineDeployment of --provider-spec.
const localName = "local"

// local returns whether the command line asks for a local cluster for a
// driver of the user's.
func (c config) local() bool { return c.driverEndpoint != "" || c.driverPath != "" }

// runLocal starts the manager against the user's driver (started here with
// --driver), applies the class and deployment of --provider-spec, and runs
// until ctx ends.
func (d *demo) runLocal(ctx context.Context) error {
	// deploy/overlays/inmemory adds no RBAC to the base: the manager's
	// rights, and nothing for a driver.
	overlay := filepath.Join(d.cfg.repo, "deploy", "overlays", "inmemory")
	d.screen.Message("Installing namespace %s, ServiceAccount %s and the manager's RBAC of deploy/base", namespace, serviceAccount)
	saKubeconfig, err := installIdentity(ctx, d.cp.cfg, d.client, overlay, d.workDir, managerIdentity)
	if err != nil {
		return err
	}

	endpoint := d.cfg.driverEndpoint
	if d.cfg.driverPath != "" {
		endpoint = "unix://" + filepath.Join(d.workDir, "driver.sock")
		d.screen.Message("Starting %s with %s=%s", d.cfg.driverPath, driverEndpointEnv, endpoint)
		d.driver, err = process.Start(process.Config{
			Name: filepath.Base(d.cfg.driverPath), Path: d.cfg.driverPath, Args: d.cfg.driverArgs,
			Env:     append(childEnv(), driverEndpointEnv+"="+endpoint),
			LogPath: filepath.Join(d.logDir, "driver.log"), Group: true,
		})
		if err != nil {
			return err
		}
	}

	target := saKubeconfig
	if d.cfg.noNodes {
		target = "none"
	}
	if d.managerHealth, err = freeAddress(); err != nil {
		return err
	}
	if d.managerMetrics, err = freeAddress(); err != nil {
		return err
	}
	d.screen.Message("Starting %s on driver %s (namespace %s, --target-kubeconfig=%s)", managerBinary, endpoint, namespace, targetName(target))
	d.manager, err = startChild(managerBinary, filepath.Join(d.cfg.bin, managerBinary), filepath.Join(d.logDir, "manager.log"),
		"--control-kubeconfig="+saKubeconfig,
		"--target-kubeconfig="+target,
		"--namespace="+namespace,
		"--driver-endpoint="+endpoint,
		"--leader-elect=false",
		"--health-probe-bind-address="+d.managerHealth,
		"--metrics-bind-address="+d.managerMetrics,
		// Local: plain HTTP, no token needed to look at the metrics.
		"--metrics-secure=false",
	)
	if err != nil {
		return err
	}
	// Ready includes the driver's Probe: this waits for the user's driver,
	// and stops at the first error of its connection that waiting will
	// not fix (localwatch.go).
	if err := d.waitLocalReady(ctx, endpoint); err != nil {
		return err
	}
	d.screen.Message("Manager ready: health http://%s/readyz, metrics http://%s/metrics", d.managerHealth, d.managerMetrics)

	if d.cfg.providerSpec != "" && d.cfg.replicas > 0 {
		if err := d.applyLocalDeployment(ctx); err != nil {
			return err
		}
		start := time.Now()
		what := fmt.Sprintf("MachineDeployment %s: %d machines available", localName, d.cfg.replicas)
		// A machine the driver refused (its provider spec, above all)
		// ends the wait at once, with the machine's own error.
		var refused error
		if err := d.waitFor(ctx, what, d.cfg.timeout, func(s *snapshot) bool {
			if refused = refusedMachine(s); refused != nil {
				return true
			}
			md := s.deployment(localName)
			return md != nil && md.Status.ObservedGeneration == md.Generation &&
				md.Status.AvailableReplicas == d.cfg.replicas && md.Status.UpdatedReplicas == d.cfg.replicas
		}); err != nil {
			return err
		}
		if refused != nil {
			return refused
		}
		d.screen.Message("Done in %s: %s", time.Since(start).Round(100*time.Millisecond), what)
	}

	driverLog := "(your driver's own output)"
	if d.driver != nil {
		driverLog = d.driver.LogPath()
	}
	d.screen.Message(`Everything keeps running until Ctrl-C. In another terminal:

    export KUBECONFIG=%s
    %s get machineclasses,machinedeployments,machinesets,machines,nodes

  The manager's identity (for a driver that registers Nodes): %s
  Logs: %s and %s
  Metrics: http://%s/metrics`,
		d.kubeconfig, filepath.Join(d.cfg.assets, "kubectl"), saKubeconfig,
		d.manager.LogPath(), driverLog, d.managerMetrics)
	err = d.waitFor(ctx, "Ctrl-C", 0, func(*snapshot) bool { return false })
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// children are the processes the demo runs: the manager first, then the
// driver when the demo started it.
func (d *demo) children() []*process.Process {
	out := []*process.Process{d.manager}
	if d.driver != nil {
		out = append(out, d.driver)
	}
	return out
}

func targetName(target string) string {
	if target == "none" {
		return "none"
	}
	return "the control cluster"
}

// applyLocalDeployment creates MachineClass "local" with --provider-spec
// and a MachineDeployment "local" of --replicas machines of it.
func (d *demo) applyLocalDeployment(ctx context.Context) error {
	class := &v1alpha1.MachineClass{
		ObjectMeta:   metav1.ObjectMeta{Namespace: namespace, Name: localName},
		ProviderSpec: runtime.RawExtension{Raw: []byte(d.cfg.providerSpec)},
	}
	labels := map[string]string{"machina-demo": localName}
	md := &v1alpha1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: localName},
		Spec: v1alpha1.MachineDeploymentSpec{
			Replicas: d.cfg.replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1alpha1.MachineTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Kind: "MachineClass", Name: localName}},
			},
		},
	}
	d.screen.Message("Creating MachineClass %s (providerSpec %s) and MachineDeployment %s of %d machines", localName,
		strings.TrimSpace(d.cfg.providerSpec), localName, d.cfg.replicas)
	if err := d.client.Create(ctx, class); err != nil {
		return fmt.Errorf("creating MachineClass %s: %w", localName, err)
	}
	if err := d.client.Create(ctx, md); err != nil {
		return fmt.Errorf("creating MachineDeployment %s: %w", localName, err)
	}
	return nil
}

// checkProviderSpec fails unless spec is a JSON object.
func checkProviderSpec(spec string) error {
	var obj map[string]any
	if err := json.Unmarshal([]byte(spec), &obj); err != nil {
		return fmt.Errorf("--provider-spec must be a JSON object: %w", err)
	}
	return nil
}
