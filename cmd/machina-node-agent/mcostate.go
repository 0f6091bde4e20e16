package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
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
	var r mcoRecord
	data, err := os.ReadFile(filepath.Join(dir, mcoStateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return r, fmt.Errorf("reading the agent's MachineConfig record: %w", err)
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("reading the agent's MachineConfig record %s: %w", filepath.Join(dir, mcoStateFile), err)
	}
	return r, nil
}

// saveMCORecord replaces the record atomically and durably.
func saveMCORecord(dir string, r mcoRecord) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(dir, mcoStateFile), append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("writing the agent's MachineConfig record: %w", err)
	}
	return nil
}
