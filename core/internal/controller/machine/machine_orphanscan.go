package machine

import (
	"google.golang.org/grpc/codes"
)

// askForOrphanScan fires Reconciler.OrphanScan when the machine's last
// operation newly failed with OUT_OF_RANGE: MCM's providers answer it when
// several VMs carry one machine's name, and MCM then scans for orphan VMs
// at once instead of waiting for the next period (machine-controller-manager
// machine.go, updateMachineToSafety). Drivers written for machina answer
// FAILED_PRECONDITION for that case (docs/driver-api.md §6.4.3); a driver
// ported from MCM may still answer OUT_OF_RANGE.
func (r *Reconciler) askForOrphanScan(s *scope) {
	code := errorCodeName(codes.OutOfRange)
	if r.OrphanScan == nil || s.machine.Status.LastOperation.ErrorCode != code ||
		s.original.Status.LastOperation.ErrorCode == code {
		return
	}
	s.log.Info("The driver answered OUT_OF_RANGE; asking for an orphan VM scan")
	r.OrphanScan()
}
