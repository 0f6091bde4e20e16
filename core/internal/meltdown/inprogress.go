package meltdown

import (
	"time"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// inProgress returns the names of the machines that count as being
// replaced: every machine that is neither Running, Unknown nor Available.
// That is a Failed machine waiting for its MachineSet, a machine being
// deleted, and a new machine (replacement or not) that has not joined yet.
// Like MCM, a deployment whose new machines do not join is not allowed to
// fail more of its old ones: if replacements cannot become healthy,
// replacing more machines only makes the outage worse.
//
// A Failed machine under preservation (preserveExpiryTime after now) is not
// counted: it is kept on purpose, and its MachineSet runs a machine in its
// place (which counts while it has not joined).
func inProgress(machines []v1alpha1.Machine, now time.Time) []string {
	var names []string
	for i := range machines {
		if replacing(&machines[i], now) {
			names = append(names, machines[i].Name)
		}
	}
	return names
}

func replacing(m *v1alpha1.Machine, now time.Time) bool {
	if m.DeletionTimestamp != nil {
		return true
	}
	st := m.Status.CurrentStatus
	switch st.Phase {
	case v1alpha1.MachineRunning, v1alpha1.MachineUnknown, v1alpha1.MachineAvailable:
		return false
	case v1alpha1.MachineFailed:
		preserved := st.PreserveExpiryTime != nil && now.Before(st.PreserveExpiryTime.Time)
		return !preserved
	}
	return true
}
