package main

import (
	"path/filepath"
	"time"
)

// mcoStateFile is the agent's record of the MachineConfig handshake in
// --state-dir, apart from the in-place record (state.json): the two
// handshakes run in two controllers and never write each other's file.
const mcoStateFile = "machineconfig.json"

// mcoRecord is what the agent remembers of the MachineConfigs it applied.
type mcoRecord struct {
	// Applied is the rendered MachineConfig whose files and units are on
	// disk in full, whether or not the handshake finished (the uncordon and
	// the report may still be missing after a restart).
	Applied   string    `json:"applied,omitempty"`
	AppliedAt time.Time `json:"appliedAt,omitzero"`
	// Managed are the paths Applied wrote: what drift is checked against,
	// and what the next configuration removes if it no longer has them.
	Managed []managedPath `json:"managed,omitempty"`
	// Failed is the configuration the agent reported Degraded or
	// Unreconcilable, so that it does not try it again on every change of
	// the Node; the Node's state annotation removed (or another
	// desiredConfig) asks for another try.
	Failed string `json:"failed,omitempty"`
}

func loadMCORecord(dir string) (mcoRecord, error) {
	return loadRecord[mcoRecord](filepath.Join(dir, mcoStateFile), "the agent's MachineConfig record")
}

// saveMCORecord replaces the record atomically and durably.
func saveMCORecord(dir string, r mcoRecord) error {
	return saveRecord(filepath.Join(dir, mcoStateFile), "the agent's MachineConfig record", r)
}
