package main

import (
	"path/filepath"
	"time"

	"github.com/machina-io/machina/cmd/machina-node-agent/internal/durable"
)

// stateFile is the agent's record in --state-dir.
const stateFile = "state.json"

// state is what the agent remembers across restarts. It is the only
// evidence of what happened between a crash and the next start: the Node
// tells what was asked, the state what was done about it.
type state struct {
	// LastApplied is the target last applied in full (files copied and the
	// apply command succeeded), whether or not the result reached the Node.
	LastApplied   string    `json:"lastApplied,omitempty"`
	LastAppliedAt time.Time `json:"lastAppliedAt,omitzero"`
	// Failed is the target whose last attempt failed and was reported, so
	// that the agent does not apply it again and again while the Node still
	// asks for it; FailedReason is what was reported.
	Failed       string `json:"failed,omitempty"`
	FailedReason string `json:"failedReason,omitempty"`
	// Attempt is written before an apply starts and removed when it ends:
	// found at start, it is an attempt that a crash (or a stop) cut short.
	Attempt *attempt `json:"attempt,omitempty"`
}

// attempt marks an apply in progress.
type attempt struct {
	Target    string    `json:"target"`
	Number    int       `json:"number"`
	StartedAt time.Time `json:"startedAt"`
}

// loadState reads the state in dir; a missing file is the empty state of an
// agent that never applied anything.
func loadState(dir string) (state, error) {
	return durable.LoadJSON[state](filepath.Join(dir, stateFile), "the agent state")
}

// saveState replaces the state in dir atomically and durably: a crash
// leaves either the old or the new record, never a torn one.
func saveState(dir string, st state) error {
	return durable.SaveJSON(filepath.Join(dir, stateFile), "the agent state", st)
}
