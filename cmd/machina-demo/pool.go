package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/cmd/internal/manifests"
	"github.com/machina-io/machina/cmd/internal/nodeimage"
	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
)

// demoPool is the pool of deploy/examples/machineconfig: the nodes labelled
// node-role.kubernetes.io/worker, which the demo's MachineDeployment puts on
// its nodes.
const demoPool = "worker"

// poolRollout applies deploy/examples/machineconfig (a MachineConfig with a
// file and a systemd unit, and the worker pool, maxUnavailable 1): the
// manager renders the pool's configuration and rolls it out to the demo's
// nodes one at a time. Each node is served by a real machina-node-agent
// process (docs/machine-config.md) with a directory of its own as the node's
// root: it writes the file and the unit there, asking the manager for its
// drain and uncordon. (The class of the machines has no machineConfig in
// its provider spec: the virtualnode driver does not play the agent too.)
// Once the pool is Updated the demo shows what each root holds and the most
// nodes it saw updating at once.
func (d *demo) poolRollout(ctx context.Context, step func(string, func(*snapshot) bool) error) error {
	objs, err := readManifests(filepath.Join(d.cfg.repo, "deploy", "examples", "machineconfig"))
	if err != nil {
		return err
	}
	before, err := takeSnapshot(ctx, d.client)
	if err != nil {
		return err
	}
	var nodes []string
	for i := range before.machines {
		if n := before.nodeOf(&before.machines[i]); n != nil {
			nodes = append(nodes, n.Name)
		}
	}
	slices.Sort(nodes)
	if err := d.startAgents(ctx, nodes); err != nil {
		return err
	}
	peak, stopWatch := d.watchInFlight(ctx, nodes)
	defer stopWatch()

	// An operator's pre-update hook on the first node: the pool updates the
	// others and waits for it until the hook is taken off.
	gated := nodes[0]
	if err := d.setNodeAnnotation(ctx, gated, demoHook, "demo"); err != nil {
		return err
	}
	d.screen.Message("Pre-update hook: Node %s carries %s, so no update starts on it until it is removed", gated, demoHook)
	d.screen.Message("Machine configuration: applying deploy/examples/machineconfig (MachineConfig 99-worker-chrony with a file, a unit "+
		"and the kernel argument nosmt, MachineConfig 99-worker-ssh with an SSH key for core, "+
		"MachineConfigPool %s of the nodes labelled node-role.kubernetes.io/worker, maxUnavailable 1)", demoPool)
	if err := manifests.Apply(ctx, d.client, objs, fieldOwner); err != nil {
		return err
	}
	err = step(fmt.Sprintf("pool %s updated %d nodes, one at a time, and waits for the hook on %s", demoPool, replicas-1, gated),
		func(*snapshot) bool {
			pool := &mcv1.MachineConfigPool{}
			if err := d.client.Get(ctx, client.ObjectKey{Name: demoPool}, pool); err != nil {
				return false
			}
			c := meta.FindStatusCondition(pool.Status.Conditions, mcv1.PoolUpdating)
			return pool.Status.UpdatedMachineCount == replicas-1 && c != nil &&
				strings.Contains(c.Message, "node "+gated+" waits for its pre-update hook(s)")
		})
	if err != nil {
		return err
	}
	d.screen.Message("Removing the pre-update hook from Node %s", gated)
	if err := d.setNodeAnnotation(ctx, gated, demoHook, ""); err != nil {
		return err
	}
	err = step(fmt.Sprintf("pool %s Updated: its rendered configuration on all %d nodes, one node at a time", demoPool, replicas),
		func(s *snapshot) bool {
			pool := &mcv1.MachineConfigPool{}
			if err := d.client.Get(ctx, client.ObjectKey{Name: demoPool}, pool); err != nil {
				return false
			}
			target := pool.Status.Configuration.Name
			if target == "" || !meta.IsStatusConditionTrue(pool.Status.Conditions, mcv1.PoolUpdated) ||
				pool.Status.UpdatedMachineCount != replicas {
				return false
			}
			for i := range s.machines {
				n := s.nodeOf(&s.machines[i])
				if n == nil || n.Annotations[mcv1.CurrentConfigAnnotation] != target {
					return false
				}
			}
			return len(s.machines) == replicas
		})
	if err != nil {
		return err
	}
	stopWatch()
	if err := d.showRoots(ctx, peak.max()); err != nil {
		return err
	}
	if peak.max() > 1 {
		return fmt.Errorf("pool %s: %d nodes were updating at once, more than its maxUnavailable 1", demoPool, peak.max())
	}
	return nil
}

// demoHook is the pre-update hook the demo puts on one node of the pool.
const demoHook = "pre-update.hook.machina.io/demo"

// setNodeAnnotation sets (or, with "", removes) one annotation of a Node
// with a merge patch.
func (d *demo) setNodeAnnotation(ctx context.Context, node, key, value string) error {
	v := "null"
	if value != "" {
		v = strconv.Quote(value)
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%s}}}`, key, v)
	n := &corev1.Node{}
	n.Name = node
	if err := d.client.Patch(ctx, n, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return fmt.Errorf("annotating Node %s: %w", node, err)
	}
	return nil
}

// showRoots prints, for each node, what its agent changed under its root
// (every path that differs from the image it was seeded with), the actions
// it reported and what it asked systemctl; it fails when nothing changed:
// the pool says Updated, the disk must agree.
func (d *demo) showRoots(ctx context.Context, peak int) error {
	image := filepath.Join(d.workDir, "agents", "image")
	if err := os.MkdirAll(image, 0o755); err != nil {
		return err
	}
	if err := nodeimage.Seed(image); err != nil {
		return err
	}
	seeded, err := rootListing(image)
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "What the node agents changed under their roots (most nodes updating at once: %d, maxUnavailable 1):", peak)
	for _, a := range d.agents {
		lines, err := rootListing(a.root)
		if err != nil {
			return fmt.Errorf("node %s: reading its root %s: %w", a.node, a.root, err)
		}
		var changed []string
		for _, l := range lines {
			if !slices.Contains(seeded, l) && !strings.HasPrefix(l, nodeimage.BootIDFile+" ") {
				changed = append(changed, l)
			}
		}
		if len(changed) == 0 {
			return fmt.Errorf("node %s: pool %s is Updated but nothing changed under its root %s", a.node, demoPool, a.root)
		}
		node := &corev1.Node{}
		if err := d.client.Get(ctx, client.ObjectKey{Name: a.node}, node); err != nil {
			return err
		}
		calls, err := a.systemctl.Calls()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "\n  node %s (root %s): actions %q, systemctl asked: %s", a.node, a.root,
			node.Annotations[mcv1.LastActionsAnnotation], strings.Join(calls, "; "))
		for _, l := range changed {
			fmt.Fprintf(&b, "\n    %s", l)
		}
	}
	d.screen.Message("%s", b.String())
	return nil
}

// readManifests decodes every object of the YAML files of dir (a plain
// directory for `kubectl apply -f`, not a kustomization).
func readManifests(dir string) ([]*unstructured.Unstructured, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			obj := &unstructured.Unstructured{}
			if err := dec.Decode(&obj.Object); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			if len(obj.Object) > 0 {
				objs = append(objs, obj)
			}
		}
	}
	return objs, nil
}
