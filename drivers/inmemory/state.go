package inmemory

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// loadState reads the VMs saved in path; a missing file means no VMs.
func loadState(path string) ([]*VM, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading state: %w", err)
	}
	var vms []*VM
	if err := json.Unmarshal(b, &vms); err != nil {
		return nil, fmt.Errorf("reading state %s: %w", path, err)
	}
	return vms, nil
}

// saveLocked writes the VMs to the state file, if there is one. It writes a
// temporary file and renames it, so a crash leaves the old or the new state,
// never half of one. The caller holds d.mu.
func (d *Driver) saveLocked() error {
	if d.opts.StateFile == "" {
		return nil
	}
	vms := make([]*VM, 0, len(d.vms))
	for _, name := range slices.Sorted(maps.Keys(d.vms)) {
		vms = append(vms, d.vms[name])
	}
	b, err := json.MarshalIndent(vms, "", "  ")
	if err != nil {
		return status.Errorf(codes.Internal, "encoding state: %v", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(d.opts.StateFile), ".inmemory-state-*")
	if err != nil {
		return status.Errorf(codes.Internal, "saving state: %v", err)
	}
	defer os.Remove(tmp.Name()) // fails harmlessly after the rename
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return status.Errorf(codes.Internal, "saving state: %v", err)
	}
	if err := tmp.Close(); err != nil {
		return status.Errorf(codes.Internal, "saving state: %v", err)
	}
	if err := os.Rename(tmp.Name(), d.opts.StateFile); err != nil {
		return status.Errorf(codes.Internal, "saving state: %v", err)
	}
	return nil
}
