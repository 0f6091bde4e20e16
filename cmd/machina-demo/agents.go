package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/cmd/internal/agentpod"
	"github.com/machina-io/machina/cmd/internal/nodeimage"
	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
	"github.com/machina-io/machina/internal/process"
)

// agentBinary is the reference node agent the pool step runs, one process
// per node.
const agentBinary = "machina-node-agent"

// nodeAgent is one machina-node-agent process and the directory it treats
// as its node's /.
type nodeAgent struct {
	node      string
	root      string
	systemctl nodeimage.Systemctl
	proc      *process.Process
}

// startAgents starts a machina-node-agent for each node, as the
// ServiceAccount of deploy/node-agent with its RBAC (what its DaemonSet
// runs as), each with a root, a state directory and an (empty) in-place
// source directory of its own under the work directory (startProcesses
// installed that overlay). Each runs with a
// token bound to a pod of the DaemonSet on its node, as a kubelet would
// give it (there is none here: the pod never runs), so that the manager's
// node configuration server gives each agent its own node's
// configuration and nothing else.
func (d *demo) startAgents(ctx context.Context, nodes []string) error {
	ds := &appsv1.DaemonSet{}
	if err := d.client.Get(ctx, client.ObjectKey{Namespace: agentIdentity.namespace, Name: agentBinary}, ds); err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(d.cp.cfg)
	if err != nil {
		return err
	}
	for _, node := range nodes {
		token, err := agentpod.Token(ctx, d.client, cs, ds, node, tokenLifetime)
		if err != nil {
			return err
		}
		kubeconfig, err := writeKubeconfig(d.cp.cfg, filepath.Join(d.workDir, agentBinary+"-"+node+".kubeconfig"), agentIdentity, token)
		if err != nil {
			return err
		}
		base := filepath.Join(d.workDir, "agents", node)
		dirs := map[string]string{}
		for _, sub := range []string{"root", "state", "source"} {
			dirs[sub] = filepath.Join(base, sub)
			if err := os.MkdirAll(dirs[sub], 0o755); err != nil {
				return err
			}
		}
		// The root holds what an OS image ships (accounts, a boot entry,
		// chrony.conf, a unit enabled by its preset); systemctl records
		// what it is asked, and its reboot gives the node a new boot ID.
		if err := nodeimage.Seed(dirs["root"]); err != nil {
			return err
		}
		systemctl, err := nodeimage.WriteSystemctl(filepath.Join(base, "bin"), dirs["root"])
		if err != nil {
			return err
		}
		p, err := startChild(agentBinary+"-"+node, filepath.Join(d.cfg.bin, agentBinary),
			filepath.Join(d.logDir, "agent-"+node+".log"),
			"--kubeconfig="+kubeconfig,
			"--node-name="+node,
			"--config-server=https://"+d.managerNodeConfig,
			"--root="+dirs["root"],
			"--source-dir="+dirs["source"],
			"--state-dir="+dirs["state"],
			"--systemctl="+systemctl.Path,
			"--boot-id-file="+filepath.Join(dirs["root"], filepath.FromSlash(nodeimage.BootIDFile)),
			"--fips-file="+filepath.Join(dirs["root"], filepath.FromSlash(nodeimage.FIPSFile)),
		)
		if err != nil {
			return err
		}
		d.agents = append(d.agents, nodeAgent{node: node, root: dirs["root"], systemctl: systemctl, proc: p})
	}
	d.screen.Message("Started %d %s processes, one per node of the pool, each with its own --root under %s "+
		"(seeded with an OS image) and a systemctl that records what it is asked",
		len(nodes), agentBinary, filepath.Join(d.workDir, "agents"))
	return nil
}

// stopAgents stops the agents; they hold no state the demo needs.
func (d *demo) stopAgents() error {
	var errs []error
	for _, a := range d.agents {
		errs = append(errs, a.proc.Stop(10*time.Second))
	}
	return errors.Join(errs...)
}

// rootListing describes what the agent wrote under root: every file with
// its mode and content, every link with its target, sorted by path.
func rootListing(root string) ([]string, error) {
	var lines []string
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel := "/" + strings.TrimPrefix(path, root+string(filepath.Separator))
		if e.Type()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			lines = append(lines, fmt.Sprintf("%s -> %s", rel, target))
			return nil
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		lines = append(lines, fmt.Sprintf("%s %04o %q", rel, info.Mode().Perm(), data))
		return nil
	})
	slices.Sort(lines)
	return lines, err
}

// inFlightPeak records the most nodes seen at once in the middle of a
// MachineConfig update: a desiredConfig they are not on yet, or whose agent
// has not reported Done.
type inFlightPeak struct {
	mu   sync.Mutex
	most int
}

func (p *inFlightPeak) max() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.most
}

// watchInFlight lists the nodes every 20ms until ctx is done; more often
// than the demo's screen, so that two overlapping updates are not missed.
func (d *demo) watchInFlight(ctx context.Context, nodes []string) (*inFlightPeak, func()) {
	p := &inFlightPeak{}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			var list corev1.NodeList
			if err := d.client.List(ctx, &list); err == nil {
				n := 0
				for _, node := range list.Items {
					a := node.Annotations
					want := a[mcv1.DesiredConfigAnnotation]
					if slices.Contains(nodes, node.Name) && want != "" &&
						(want != a[mcv1.CurrentConfigAnnotation] || a[mcv1.StateAnnotation] != mcv1.MachineConfigStateDone) {
						n++
					}
				}
				p.mu.Lock()
				p.most = max(p.most, n)
				p.mu.Unlock()
			}
			_ = sleep(ctx, 20*time.Millisecond)
		}
	}()
	return p, func() { cancel(); <-done }
}
