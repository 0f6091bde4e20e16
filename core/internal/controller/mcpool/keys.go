package mcpool

import mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"

// The node annotations of the handshake and their values, short.
const (
	annCurrentConfig = mcv1.CurrentConfigAnnotation
	annDesiredConfig = mcv1.DesiredConfigAnnotation
	annState         = mcv1.StateAnnotation
	annReason        = mcv1.ReasonAnnotation

	stateDone           = mcv1.MachineConfigStateDone
	stateWorking        = mcv1.MachineConfigStateWorking
	stateDegraded       = mcv1.MachineConfigStateDegraded
	stateUnreconcilable = mcv1.MachineConfigStateUnreconcilable
)
