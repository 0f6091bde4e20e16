package machineconfig

import (
	"path/filepath"
	"time"

	"github.com/machina-io/machina/cmd/machina-node-agent/internal/durable"
)

// recordFile is the agent's record of the MachineConfig handshake in
// --state-dir, apart from the in-place record (state.json): the two
// handshakes run in two controllers and never write each other's file.
const recordFile = "machineconfig.json"

// record is what the agent remembers of the MachineConfigs it applied.
type record struct {
	// Applied is the rendered MachineConfig whose files, units, keys and
	// kernel arguments are on disk in full, whether or not its activation
	// and the handshake finished (Pending, the uncordon and the report may
	// still be missing after a restart).
	Applied   string    `json:"applied,omitempty"`
	AppliedAt time.Time `json:"appliedAt,omitzero"`
	// Managed are the node paths Applied put in place: what drift is
	// checked against.
	Managed []managedPath `json:"managed,omitempty"`
	// Originals are the node paths any configuration ever wrote, with what
	// was there before the first write (originals.go): restored when no
	// configuration has the path any more.
	Originals map[string]original `json:"originals,omitempty"`
	// OS is what the OS update command was last run with successfully.
	OS osSettings `json:"os,omitzero"`
	// Pending is the activation of Applied still to run (or to see
	// through, for a reboot).
	Pending *activation `json:"pending,omitempty"`
	// LastActions is what activated Applied, once done.
	LastActions string `json:"lastActions,omitempty"`
	// EnabledUnits are the units whose enablement Applied sets: a unit that
	// leaves the list goes back to its preset.
	EnabledUnits []string `json:"enabledUnits,omitempty"`

	// Failed is the configuration the agent last reported Degraded or
	// Unreconcilable; Failures counts its failed attempts in a row and
	// FailedAt is the last, for the retry's back-off.
	Failed   string    `json:"failed,omitempty"`
	Failures int       `json:"failures,omitempty"`
	FailedAt time.Time `json:"failedAt,omitzero"`
}

// activation is the least action that makes the node run a configuration
// written to disk (actions.go).
type activation struct {
	Config string `json:"config"`
	// Steps are the systemctl steps still to run, in order.
	Steps []step `json:"steps,omitempty"`
	// Reboot: the node reboots; BootID is the boot it was asked in (empty
	// until asked) and RebootAskedAt when.
	Reboot        bool      `json:"reboot,omitempty"`
	BootID        string    `json:"bootID,omitempty"`
	RebootAskedAt time.Time `json:"rebootAskedAt,omitzero"`
	// Summary is what the node did, for the report.
	Summary string `json:"summary"`
}

func loadRecord(dir string) (record, error) {
	return durable.LoadJSON[record](filepath.Join(dir, recordFile), "the agent's MachineConfig record")
}

// saveRecord replaces the record atomically and durably.
func saveRecord(dir string, r record) error {
	return durable.SaveJSON(filepath.Join(dir, recordFile), "the agent's MachineConfig record", r)
}
