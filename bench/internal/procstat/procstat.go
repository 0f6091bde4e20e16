// Package procstat reads what a Linux process has cost so far from /proc:
// CPU time, resident memory and its peak.
package procstat

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of the CPU times in /proc. It is 100 on
// every Linux architecture Go supports (the kernel fixes it for the ABI),
// which saves asking sysconf through cgo.
const clockTicks = 100

// Sample is one reading of a process.
type Sample struct {
	// CPU is the user plus system time the process has used since it
	// started.
	CPU time.Duration
	// RSS is the resident set size now, in bytes (VmRSS).
	RSS uint64
	// PeakRSS is the highest resident set size since the process started
	// or since the last ResetPeak, in bytes (VmHWM).
	PeakRSS uint64
}

// Read samples process pid.
func Read(pid int) (Sample, error) {
	var s Sample
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	fields, err := statFields(stat)
	if err != nil {
		return s, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	// utime and stime are fields 14 and 15 of stat(5), counted from 1;
	// fields holds field 3 onwards.
	utime, err1 := strconv.ParseUint(fields[14-3], 10, 64)
	stime, err2 := strconv.ParseUint(fields[15-3], 10, 64)
	if err1 != nil || err2 != nil {
		return s, fmt.Errorf("/proc/%d/stat: bad utime %q or stime %q", pid, fields[14-3], fields[15-3])
	}
	s.CPU = time.Duration(utime+stime) * time.Second / clockTicks

	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		switch key {
		case "VmRSS":
			s.RSS, err = kiloBytes(value)
		case "VmHWM":
			s.PeakRSS, err = kiloBytes(value)
		}
		if err != nil {
			return s, fmt.Errorf("/proc/%d/status %s: %w", pid, key, err)
		}
	}
	return s, sc.Err()
}

// statFields returns the fields of a /proc/<pid>/stat line after the
// command name (field 3 onwards). The name is in parentheses and may itself
// hold spaces and parentheses, so it is skipped up to the last ')'.
func statFields(stat []byte) ([]string, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return nil, fmt.Errorf("no command name in %q", stat)
	}
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) < 15-2 {
		return nil, fmt.Errorf("only %d fields", len(fields)+2)
	}
	return fields, nil
}

// kiloBytes parses a /proc/<pid>/status value such as "  123456 kB".
func kiloBytes(v string) (uint64, error) {
	v = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB"))
	n, err := strconv.ParseUint(v, 10, 64)
	return n * 1024, err
}

// ResetPeak resets the peak resident set size of pid to its current size
// (writing 5 to /proc/<pid>/clear_refs), so that the next Read reports
// the peak of what happens from now on. Only the owner of a process (or
// root) may do it.
func ResetPeak(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// Child returns the process ID of a child of ppid whose command name is
// comm (as in /proc/<pid>/comm, at most 15 bytes).
func Child(ppid int, comm string) (int, error) {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		return 0, err
	}
	for _, path := range stats {
		stat, err := os.ReadFile(path)
		if err != nil {
			continue // the process ended meanwhile
		}
		open, end := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
		if open < 0 || end < open {
			continue
		}
		fields, err := statFields(stat)
		if err != nil {
			continue
		}
		// fields[1] is field 4, the parent's process ID.
		if string(stat[open+1:end]) == comm && fields[1] == strconv.Itoa(ppid) {
			return strconv.Atoi(filepath.Base(filepath.Dir(path)))
		}
	}
	return 0, fmt.Errorf("no child %q of process %d", comm, ppid)
}

// HostCPU is the machine's CPU time so far, from the first line of
// /proc/stat.
type HostCPU struct {
	// Busy is the time all CPUs spent on anything but idle and iowait.
	Busy time.Duration
	// Total is the time of all CPUs, busy or not.
	Total time.Duration
}

// ReadHost reads the machine's CPU times.
func ReadHost() (HostCPU, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return HostCPU{}, err
	}
	line, _, _ := bytes.Cut(data, []byte("\n"))
	fields := strings.Fields(string(line))
	if len(fields) < 5 || fields[0] != "cpu" {
		return HostCPU{}, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var h HostCPU
	// user nice system idle iowait irq softirq steal (guest time is
	// already part of user and nice, so it is not added again).
	for i, f := range fields[1:min(len(fields), 9)] {
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return HostCPU{}, fmt.Errorf("/proc/stat: %w", err)
		}
		d := time.Duration(n) * time.Second / clockTicks
		h.Total += d
		if i != 3 && i != 4 {
			h.Busy += d
		}
	}
	return h, nil
}

// Utilisation returns the fraction of the machine's CPU that was busy
// between two readings (0 to 1).
func Utilisation(before, after HostCPU) float64 {
	total := after.Total - before.Total
	if total <= 0 {
		return 0
	}
	return float64(after.Busy-before.Busy) / float64(total)
}

// LoadAverage returns the 1-minute load average (/proc/loadavg).
func LoadAverage() (float64, error) {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, err
	}
	fields := strings.Fields(string(data))
	if len(fields) == 0 {
		return 0, fmt.Errorf("/proc/loadavg: empty")
	}
	return strconv.ParseFloat(fields[0], 64)
}
