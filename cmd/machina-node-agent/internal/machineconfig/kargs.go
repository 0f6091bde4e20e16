package machineconfig

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/machina-io/machina/cmd/machina-node-agent/internal/durable"
)

// bootEntriesDir holds the boot loader entries (the Boot Loader
// Specification's Type #1 entries that GRUB's blscfg, systemd-boot and
// ostree use), as a node path.
const bootEntriesDir = "/boot/loader/entries"

// kernelArgWrites is the kernel arguments as writes: every boot loader
// entry with args appended to its options line. Each entry is computed
// from its original (the image's, kept the first time the agent wrote it),
// so that the arguments of an earlier configuration are never stacked and
// removing them all restores the entry as it was. A node without entries
// cannot take kernel arguments.
func kernelArgWrites(root *durable.Root, stateDir string, rec *record, args []string) ([]write, error) {
	if len(args) == 0 {
		return nil, nil
	}
	for _, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n\r") {
			return nil, fmt.Errorf("kernelArguments: %q is not one argument", a)
		}
	}
	entries, err := root.ReadDir(bootEntriesDir)
	if err != nil {
		return nil, fmt.Errorf("kernelArguments: %w", err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".conf") {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("kernelArguments: the node has no boot loader entries in %s to add them to", bootEntriesDir)
	}
	slices.Sort(names)
	var out []write
	for _, n := range names {
		p := path.Join(bootEntriesDir, n)
		base, mode, uid, gid, err := entryBase(root, stateDir, rec, p)
		if err != nil {
			return nil, fmt.Errorf("kernelArguments: %w", err)
		}
		out = append(out, fileWrite(p, withArgs(base, args), mode, uid, gid, origin{Kind: originKargs}))
	}
	return out, nil
}

// entryBase is the boot entry p as the image has it: its original if the
// agent wrote it before, else what is on disk.
func entryBase(root *durable.Root, stateDir string, rec *record, p string) ([]byte, os.FileMode, int, int, error) {
	if orig, ok := rec.Originals[p]; ok && !orig.Absent && orig.Link == "" {
		data, err := os.ReadFile(filepath.Join(stateDir, originalsDir, filepath.FromSlash(p)))
		return data, orig.Mode, orig.UID, orig.GID, err
	}
	info, err := root.Lstat(p)
	if err != nil {
		return nil, 0, 0, 0, err
	}
	if !info.Mode().IsRegular() {
		return nil, 0, 0, 0, fmt.Errorf("%s is not a regular file", p)
	}
	f, err := root.OpenNoFollow(p)
	if err != nil {
		return nil, 0, 0, 0, err
	}
	defer func() { _ = f.Close() }()
	data, err := io.ReadAll(f)
	uid, gid := 0, 0
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		uid, gid = int(st.Uid), int(st.Gid)
	}
	return data, info.Mode().Perm(), uid, gid, err
}

// withArgs appends args to the options line of a boot entry (adding one
// when it has none).
func withArgs(entry []byte, args []string) []byte {
	var out bytes.Buffer
	found := false
	s := bufio.NewScanner(bytes.NewReader(entry))
	for s.Scan() {
		line := s.Text()
		if key, _, _ := strings.Cut(strings.TrimSpace(line), " "); key == "options" && !found {
			found = true
			line = strings.TrimRight(line, " \t") + " " + strings.Join(args, " ")
		}
		out.WriteString(line + "\n")
	}
	if !found {
		out.WriteString("options " + strings.Join(args, " ") + "\n")
	}
	return out.Bytes()
}
