package main

import mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"

// The node annotations of the MachineConfig handshake
// (docs/machine-config.md) and their values, short.
const (
	mcoCurrentConfig    = mcv1.CurrentConfigAnnotation
	mcoDesiredConfig    = mcv1.DesiredConfigAnnotation
	mcoState            = mcv1.StateAnnotation
	mcoReason           = mcv1.ReasonAnnotation
	mcoDesiredDrain     = mcv1.DesiredDrainAnnotation
	mcoLastAppliedDrain = mcv1.LastAppliedDrainAnnotation

	mcoStateDone           = mcv1.MachineConfigStateDone
	mcoStateWorking        = mcv1.MachineConfigStateWorking
	mcoStateDegraded       = mcv1.MachineConfigStateDegraded
	mcoStateUnreconcilable = mcv1.MachineConfigStateUnreconcilable
)
