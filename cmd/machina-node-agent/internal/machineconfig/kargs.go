package machineconfig

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
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
func kernelArgWrites(root, stateDir string, rec *record, args []string) ([]write, error) {
	if len(args) == 0 {
		return nil, nil
	}
	for _, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n\r") {
			return nil, fmt.Errorf("kernelArguments: %q is not one argument", a)
		}
	}
	dir, err := under(root, bootEntriesDir+"/x")
	if err != nil {
		return nil, fmt.Errorf("kernelArguments: %w", err)
	}
	matches, err := filepath.Glob(filepath.Join(filepath.Dir(dir), "*.conf"))
	if err != nil {
		return nil, err
	}
	if len(matches) == 0 {
		return nil, fmt.Errorf("kernelArguments: the node has no boot loader entries in %s to add them to", bootEntriesDir)
	}
	slices.Sort(matches)
	var out []write
	for _, m := range matches {
		p := path.Join(bootEntriesDir, filepath.Base(m))
		base, mode, uid, gid, err := entryBase(stateDir, rec, p, m)
		if err != nil {
			return nil, fmt.Errorf("kernelArguments: %w", err)
		}
		out = append(out, write{path: p, contents: withArgs(base, args), mode: mode, uid: uid, gid: gid, origin: origin{Kind: originKargs}})
	}
	return out, nil
}

// entryBase is the boot entry p as the image has it: its original if the
// agent wrote it before, else what is on disk.
func entryBase(stateDir string, rec *record, p, at string) ([]byte, os.FileMode, int, int, error) {
	if orig, ok := rec.Originals[p]; ok && !orig.Absent && orig.Link == "" {
		data, err := os.ReadFile(filepath.Join(stateDir, originalsDir, filepath.FromSlash(p)))
		return data, orig.Mode, orig.UID, orig.GID, err
	}
	info, err := os.Lstat(at)
	if err != nil {
		return nil, 0, 0, 0, err
	}
	if !info.Mode().IsRegular() {
		return nil, 0, 0, 0, fmt.Errorf("%s is not a regular file", p)
	}
	data, err := os.ReadFile(at)
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
