package conformance

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// tcpListeners returns the addresses (host:port, dialable) of the TCP
// sockets in state LISTEN that the processes of process group pgid hold:
// their socket inodes from /proc/<pid>/fd, matched in /proc/<pid>/net/tcp
// and tcp6. A wildcard address is returned as the loopback one.
func tcpListeners(pgid int) ([]string, error) {
	pids, err := groupPIDs(pgid)
	if err != nil {
		return nil, err
	}
	inodes := map[string]bool{}
	for _, pid := range pids {
		fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
		for _, fd := range fds {
			target, err := os.Readlink(fd)
			if err == nil && strings.HasPrefix(target, "socket:[") {
				inodes[strings.TrimSuffix(strings.TrimPrefix(target, "socket:["), "]")] = true
			}
		}
	}
	if len(inodes) == 0 || len(pids) == 0 {
		return nil, nil
	}
	var out []string
	for _, table := range []string{"tcp", "tcp6"} {
		addrs, err := listening(fmt.Sprintf("/proc/%d/net/%s", pids[0], table), inodes)
		if err != nil && !os.IsNotExist(err) {
			return nil, err
		}
		out = append(out, addrs...)
	}
	return out, nil
}

// groupPIDs lists the processes whose process group is pgid.
func groupPIDs(pgid int) ([]int, error) {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, stat := range stats {
		b, err := os.ReadFile(stat)
		if err != nil {
			continue // the process is gone
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces and ')'.
		rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
		f := strings.Fields(rest)
		if len(f) < 3 {
			continue
		}
		if g, err := strconv.Atoi(f[2]); err == nil && g == pgid {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(stat)))
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// listening reads a /proc/net/tcp{,6} table and returns the local addresses
// of the LISTEN sockets (state 0A) among inodes.
func listening(table string, inodes map[string]bool) ([]string, error) {
	f, err := os.Open(table)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		f := strings.Fields(sc.Text())
		if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] {
			continue
		}
		if addr, ok := procAddr(f[1]); ok {
			out = append(out, addr)
		}
	}
	return out, sc.Err()
}

// procAddr decodes "0100007F:1F90" (the address as 32-bit words in host
// byte order, little-endian here, and the port in hex) into a dialable
// host:port.
func procAddr(s string) (string, bool) {
	hexIP, hexPort, ok := strings.Cut(s, ":")
	raw, err := hex.DecodeString(hexIP)
	port, perr := strconv.ParseUint(hexPort, 16, 16)
	if !ok || err != nil || perr != nil || (len(raw) != 4 && len(raw) != 16) {
		return "", false
	}
	ip := make(net.IP, len(raw))
	for w := 0; w < len(raw); w += 4 {
		for i := range 4 {
			ip[w+i] = raw[w+3-i]
		}
	}
	switch {
	case ip.IsUnspecified() && len(raw) == 4:
		ip = net.IPv4(127, 0, 0, 1)
	case ip.IsUnspecified():
		ip = net.IPv6loopback
	}
	return net.JoinHostPort(ip.String(), strconv.FormatUint(port, 10)), true
}
