package mcpool

import (
	"time"

	"github.com/go-logr/logr"

	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
)

// scope is what one sync of a pool read and decided.
type scope struct {
	pool *mcv1.MachineConfigPool
	// orig is the pool as read, for the status patch.
	orig *mcv1.MachineConfigPool
	// target is the rendered configuration the pool's nodes must run
	// (spec.configuration.name); "" before the first rendering.
	target string
	log    logr.Logger
	now    time.Time

	// members are the pool's Nodes that no other pool chooses.
	members []poolNode
	// shared are the Nodes this pool and others choose, with the others.
	shared map[string][]string
	// invalid says why the pool's spec cannot be used; "" when it can.
	invalid string
	// maxUnavailable is the resolved budget.
	maxUnavailable int32
	// held says why each node the rollout passed over may not be disrupted
	// now (machina.io/do-not-disrupt).
	held []string
}
