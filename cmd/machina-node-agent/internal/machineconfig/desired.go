package machineconfig

import (
	"context"
	"errors"
	"fmt"
	"io"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/cmd/machina-node-agent/internal/durable"
	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
)

// desired is a rendered MachineConfig, read and checked once per change of
// the Node's desiredConfig (Agent.load caches it by name: a rendered name
// is a hash of its content).
type desired struct {
	name string
	spec mcv1.MachineConfigSpec
	ign  *mcv1.Ignition
	// pool is the pool it was rendered for, whose nodeDisruptionPolicy
	// says how changes are activated; "" when unknown.
	pool string
}

// unreconcilableError is a configuration that can never be applied in
// place: retrying it is pointless, only another configuration helps.
type unreconcilableError struct{ err error }

func (e *unreconcilableError) Error() string { return e.err.Error() }
func (e *unreconcilableError) Unwrap() error { return e.err }

// notFoundError is a rendered MachineConfig that does not exist.
type notFoundError struct{ name string }

func (e *notFoundError) Error() string {
	return fmt.Sprintf("rendered MachineConfig %s not found", e.name)
}

// load reads and checks the rendered MachineConfig name, or returns the
// one read last time when it is the same.
func (a *Agent) load(ctx context.Context, name string) (*desired, error) {
	if a.cached != nil && a.cached.name == name {
		return a.cached, nil
	}
	mc := &mcv1.MachineConfig{}
	if err := a.reader.Get(ctx, client.ObjectKey{Name: name}, mc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &notFoundError{name: name}
		}
		return nil, fmt.Errorf("reading MachineConfig %s: %w", name, err)
	}
	ign, err := mcv1.ParseIgnition(mc.Spec.Config.Raw)
	if err != nil {
		return nil, &unreconcilableError{fmt.Errorf("%s: spec.config: %w", name, err)}
	}
	if err := checkSpec(mc.Spec); err != nil {
		return nil, &unreconcilableError{fmt.Errorf("%s: %w", name, err)}
	}
	d := &desired{name: name, spec: mc.Spec, ign: ign, pool: mc.Annotations[mcv1.RenderedFromPoolAnnotation]}
	for _, ref := range mc.OwnerReferences {
		if ref.Kind == "MachineConfigPool" && d.pool == "" {
			d.pool = ref.Name
		}
	}
	a.cached = d
	return d, nil
}

// checkSpec refuses what no node can take whatever it runs.
func checkSpec(spec mcv1.MachineConfigSpec) error {
	switch spec.KernelType {
	case "", "default", "realtime", "64k-pages":
	default:
		return fmt.Errorf("kernelType %q is not one of default, realtime, 64k-pages", spec.KernelType)
	}
	return nil
}

// policy is the nodeDisruptionPolicy of d's pool, nil when it has none or
// is gone (the defaults apply).
func (a *Agent) policy(ctx context.Context, d *desired) (*mcv1.NodeDisruptionPolicy, error) {
	if d.pool == "" {
		return nil, nil
	}
	pool := &mcv1.MachineConfigPool{}
	if err := a.reader.Get(ctx, client.ObjectKey{Name: d.pool}, pool); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading MachineConfigPool %s for its nodeDisruptionPolicy: %w", d.pool, err)
	}
	return pool.Spec.NodeDisruptionPolicy, nil
}

// writes is everything d puts on the node under root: files (with their
// owners looked up in the node's /etc/passwd and /etc/group), units and
// their enablement, the core user's SSH keys, the boot entries with the
// kernel arguments. A field that cannot be applied on this node is an
// error naming it.
func (a *Agent) writes(d *desired, rec *record) ([]write, error) {
	root, err := a.rootFS()
	if err != nil {
		return nil, &transientError{err}
	}
	var out []write
	for i, f := range d.ign.Storage.Files {
		field := fmt.Sprintf("storage.files[%d] (%s)", i, f.Path)
		p, err := nodePath(f.Path)
		if err != nil {
			return nil, &unreconcilableError{fmt.Errorf("%s: %w", field, err)}
		}
		uid, err := a.owner(root, f.User, lookupUserID)
		if err != nil {
			return nil, fmt.Errorf("%s.user: %w", field, err)
		}
		gid, err := a.owner(root, f.Group, lookupGroup)
		if err != nil {
			return nil, fmt.Errorf("%s.group: %w", field, err)
		}
		// The contents are streamed from the configuration, hashed here and
		// decoded again when written: never held whole.
		open := func() (io.ReadCloser, error) {
			r, err := f.Open()
			return io.NopCloser(r), err
		}
		w, err := streamWrite(p, open, fileMode(f.FileMode()), uid, gid, origin{Kind: originFile, Name: p})
		if err != nil {
			return nil, &unreconcilableError{fmt.Errorf("%s: %w", field, err)}
		}
		if f.Overwrite != nil && !*f.Overwrite {
			if _, ours := rec.Originals[p]; !ours {
				if changes, err := differs(root, w); err == nil && changes && exists(root, p) {
					return nil, fmt.Errorf("%s.overwrite: false, and the node has another file there", field)
				}
			}
		}
		out = append(out, w)
	}
	units, err := unitWrites(root, d.ign.Systemd.Units)
	if err != nil {
		return nil, err
	}
	out = append(out, units...)
	keys, err := sshKeyWrites(root, d.ign.Passwd.Users)
	if err != nil {
		return nil, err
	}
	out = append(out, keys...)
	kargs, err := kernelArgWrites(root, a.opts.StateDir, rec, d.spec.KernelArguments)
	if err != nil {
		return nil, err
	}
	out = append(out, kargs...)
	// One path, one write: a unit's file and a storage file of the same
	// path, or a link asked twice, would fight.
	seen := map[string]origin{}
	for _, w := range out {
		if o, dup := seen[w.path]; dup && (o != w.origin || !w.absent) {
			return nil, fmt.Errorf("%s is written by both %s and %s", w.path, o, w.origin)
		}
		seen[w.path] = w.origin
	}
	return out, nil
}

// owner resolves a file's user or group: its id, its name looked up on the
// node, or root.
func (a *Agent) owner(root *durable.Root, o mcv1.IgnitionOwner, lookup func(root *durable.Root, name string) (int, error)) (int, error) {
	switch {
	case o.ID != nil:
		return *o.ID, nil
	case o.Name != nil && *o.Name != "":
		return lookup(root, *o.Name)
	}
	return 0, nil
}

func lookupUserID(root *durable.Root, name string) (int, error) {
	u, err := lookupUser(root, name)
	return u.uid, err
}

func exists(root *durable.Root, p string) bool {
	m := managedPath{Path: p, Absent: true}
	why, err := driftOf(root, m)
	return err != nil || why != ""
}

// enabledUnits are the units whose enablement d sets.
func enabledUnits(d *desired) []string {
	var out []string
	for _, u := range d.ign.Systemd.Units {
		if u.Enabled != nil && (u.Mask == nil || !*u.Mask) {
			out = append(out, u.Name)
		}
	}
	return out
}

// isRetryable tells a failure the back-off retries from one that waits for
// another configuration.
func isRetryable(err error) bool {
	var u *unreconcilableError
	return !errors.As(err, &u)
}
