package mcrender

import (
	"github.com/go-logr/logr"

	mcfgv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
	"github.com/machina-io/machina/core/internal/controller/setup"
)

// scope is what one render of a pool read and decided.
type scope struct {
	pool *mcfgv1.MachineConfigPool
	// orig is the pool as read.
	orig *mcfgv1.MachineConfigPool
	// patcher writes the pool's spec (pointPool) and its status
	// (writeStatus), each with the resourceVersion it changes.
	patcher *setup.Patcher
	log     logr.Logger

	// fragments are the pool's MachineConfigs in merge order.
	fragments []mcfgv1.MachineConfig
	// rendered is the merge of the fragments; name its name.
	rendered *rendered
	name     string
	// failure says why the pool cannot be rendered; "" when it can. The
	// pool then keeps its last good target.
	failure       string
	failureReason string
}
