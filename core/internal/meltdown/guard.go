package meltdown

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// Guard is what the Machine controller asks before it moves a machine from
// Unknown to Failed. It reads the machine's MachineDeployment and the
// deployment's machines through Reader (the manager's cached client), and
// takes a permit from its permit set.
type Guard struct {
	// Reader reads MachineDeployments and Machines, usually the manager's
	// cached client.
	Reader client.Reader
	// Default is the limit of a deployment without the annotation
	// (--machine-max-replacements); MustParseLimit(DefaultMaxReplacements)
	// when unset.
	Default *intstr.IntOrString
	// Now is the clock; time.Now when nil.
	Now func() time.Time

	// grants are the permits handed out, shared by all workers of the
	// controller; made on first use for a Guard built as a literal.
	grants *permitSet
	once   sync.Once
}

// NewGuard returns a Guard reading through reader with the default limit
// def (a value of --machine-max-replacements).
func NewGuard(reader client.Reader, def intstr.IntOrString) *Guard {
	return &Guard{Reader: reader, Default: &def, grants: newPermitSet(0)}
}

// Decision is the Guard's answer for one machine.
type Decision struct {
	// Allowed: the machine may be moved to Failed now. When false, it stays
	// Unknown and the caller asks again later.
	Allowed bool
	// Deployment is "namespace/name" of the machine's MachineDeployment,
	// empty when it belongs to none.
	Deployment string
	// Limit and InProgress are the deployment's limit and the number of its
	// machines being replaced (observed), for logs and events.
	Limit      int
	InProgress int
	// Warning, when set, says the deployment's annotation was malformed and
	// the default limit applied; worth an event on the deployment.
	Warning *AnnotationError
}

// Admit decides whether m may be moved from Unknown to Failed now and, if
// so, takes a permit for it. A machine that belongs to no MachineDeployment
// (no label "name", or the deployment is gone) is always allowed: there is
// no deployment to protect.
//
// After an allowed decision the caller either records the Failed phase, or
// calls Release when it could not (so that the permit does not block
// another machine until it expires).
func (g *Guard) Admit(ctx context.Context, m *v1alpha1.Machine) (Decision, error) {
	name := m.Labels[v1alpha1.MachineDeploymentNameLabel]
	if name == "" {
		return Decision{Allowed: true}, nil
	}
	key := client.ObjectKey{Namespace: m.Namespace, Name: name}
	d := Decision{Deployment: key.String()}

	md := &v1alpha1.MachineDeployment{}
	if err := g.Reader.Get(ctx, key, md); err != nil {
		if apierrors.IsNotFound(err) {
			d.Deployment = ""
			d.Allowed = true
			return d, nil
		}
		return d, fmt.Errorf("reading MachineDeployment %s: %w", key, err)
	}
	limit, err := limitFor(md, g.defaultLimit())
	if annErr := (*AnnotationError)(nil); errors.As(err, &annErr) {
		d.Warning = annErr
	} else if err != nil {
		return d, err
	}
	d.Limit = limit

	// The read's time is on the permits' clock, which grant times use.
	seen := listing{at: g.permits().now()}
	machines := &v1alpha1.MachineList{}
	if err := g.Reader.List(ctx, machines, client.InNamespace(m.Namespace),
		client.MatchingLabels{v1alpha1.MachineDeploymentNameLabel: name}); err != nil {
		return d, fmt.Errorf("listing machines of MachineDeployment %s: %w", key, err)
	}
	for i := range machines.Items {
		seen.names = append(seen.names, machines.Items[i].Name)
	}
	seen.inProgress = inProgress(machines.Items, g.now())
	d.InProgress = len(seen.inProgress)
	d.Allowed = g.permits().TryAcquire(d.Deployment, m.Name, limit, seen)
	return d, nil
}

// Release gives back the permit m got from Admit, if any.
func (g *Guard) Release(m *v1alpha1.Machine) {
	name := m.Labels[v1alpha1.MachineDeploymentNameLabel]
	if name == "" {
		return
	}
	g.permits().Release(client.ObjectKey{Namespace: m.Namespace, Name: name}.String(), m.Name)
}

func (g *Guard) defaultLimit() intstr.IntOrString {
	if g.Default != nil {
		return *g.Default
	}
	return MustParseLimit(DefaultMaxReplacements)
}

// permits returns g.grants, creating it on first use for a Guard built as
// a literal.
func (g *Guard) permits() *permitSet {
	g.once.Do(func() {
		if g.grants == nil {
			g.grants = newPermitSet(0)
		}
	})
	return g.grants
}

func (g *Guard) now() time.Time {
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}
