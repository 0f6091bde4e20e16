//go:build !linux

package conformance

import "errors"

// tcpListeners needs /proc; elsewhere Launcher/no_tcp_listener is skipped.
func tcpListeners(int) ([]string, error) {
	return nil, errors.New("finding a process's TCP listeners needs Linux's /proc")
}
