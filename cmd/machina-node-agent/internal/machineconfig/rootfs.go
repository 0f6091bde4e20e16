package machineconfig

import (
	"fmt"
	"maps"
	"path"
	"slices"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/machina-io/machina/cmd/machina-node-agent/internal/durable"
)

// rootFS is the node's root (--root), opened on first use and kept for the
// agent's life: every node path the agent reads, writes or removes goes
// through it and resolves inside it (durable.Root). The first open also
// removes what a write cut short left behind (cleanTemps).
func (a *Agent) rootFS() (*durable.Root, error) {
	if a.root != nil {
		return a.root, nil
	}
	root, err := durable.OpenRoot(a.opts.Root)
	if err != nil {
		return nil, fmt.Errorf("opening the node's root %s: %w", a.opts.Root, err)
	}
	rec, err := loadRecord(a.opts.StateDir)
	if err != nil {
		_ = root.Close()
		return nil, err
	}
	if err := cleanTemps(root, a.opts.StateDir, rec); err != nil {
		_ = root.Close()
		return nil, err
	}
	a.root = root
	return root, nil
}

// cleanTemps removes the temporary files an agent killed in the middle of
// a write left: anywhere in its state directory, and beside every node path
// a configuration wrote or was about to write (each is in the record's
// originals before its first write, apply). Left alone, each would stay
// forever, as large as the file it was to become.
func cleanTemps(root *durable.Root, stateDir string, rec record) error {
	log := ctrl.Log.WithName("machineconfig")
	removed, err := durable.CleanTempsUnder(stateDir)
	if err != nil {
		return fmt.Errorf("removing temporary files from %s: %w", stateDir, err)
	}
	dirs := map[string]bool{}
	for p := range rec.Originals {
		dirs[path.Dir(p)] = true
	}
	for _, m := range rec.Managed {
		dirs[path.Dir(m.Path)] = true
	}
	for _, dir := range slices.Sorted(maps.Keys(dirs)) {
		gone, err := root.CleanTemps(dir)
		if err != nil {
			return fmt.Errorf("removing temporary files from %s: %w", dir, err)
		}
		removed = append(removed, gone...)
	}
	if len(removed) > 0 {
		log.Info("Removed temporary files an interrupted write left", "files", removed)
	}
	return nil
}
