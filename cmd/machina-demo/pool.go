package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/cmd/internal/manifests"
	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
)

// demoPool is the pool of deploy/examples/machineconfig: the nodes labelled
// node-role.kubernetes.io/worker, which the demo's MachineDeployment puts on
// its nodes.
const demoPool = "worker"

// poolRollout applies deploy/examples/machineconfig (a MachineConfig with a
// file and a systemd unit, and the worker pool, maxUnavailable 1): the
// manager renders the pool's configuration and rolls it out to the
// demo's nodes one at a time, each node's agent (played by the virtualnode
// driver, docs/machine-config.md) asking for its drain and uncordon.
func (d *demo) poolRollout(ctx context.Context, step func(string, func(*snapshot) bool) error) error {
	objs, err := readManifests(filepath.Join(d.cfg.repo, "deploy", "examples", "machineconfig"))
	if err != nil {
		return err
	}
	d.screen.Message("Machine configuration: applying deploy/examples/machineconfig (MachineConfig 99-worker-chrony with a file and a unit, "+
		"MachineConfigPool %s of the nodes labelled node-role.kubernetes.io/worker, maxUnavailable 1)", demoPool)
	if err := manifests.Apply(ctx, d.client, objs, fieldOwner); err != nil {
		return err
	}
	return step(fmt.Sprintf("pool %s Updated: its rendered configuration on all %d nodes, one node at a time", demoPool, replicas),
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
