package sdk

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

const (
	// EndpointEnv is the environment variable that holds the endpoint a
	// driver listens on.
	EndpointEnv = "MACHINA_DRIVER_ENDPOINT"
	// DefaultEndpoint is the endpoint used when neither the --endpoint flag
	// nor EndpointEnv is set.
	DefaultEndpoint = "unix:///var/run/machina/driver.sock"
)

const (
	unixScheme = "unix://"
	tcpScheme  = "tcp://"
	// socketDirMode is for a socket directory the SDK creates; the socket
	// itself is owner-only.
	socketDirMode  = 0o750
	socketFileMode = 0o600
	// maxSocketPathBytes is the sun_path limit of 108 bytes minus the
	// terminating NUL.
	maxSocketPathBytes = 107
	// staleProbeTimeout bounds the check whether a leftover socket file
	// still has a live server behind it.
	staleProbeTimeout = time.Second
)

// parsedEndpoint is a driver endpoint split into network and address.
type parsedEndpoint struct {
	network string // "unix" or "tcp"
	address string // socket path or host:port
}

// parseEndpoint accepts unix:///absolute/path and tcp://host:port.
func parseEndpoint(s string) (parsedEndpoint, error) {
	switch {
	case strings.HasPrefix(s, unixScheme):
		path := strings.TrimPrefix(s, unixScheme)
		if path == "" {
			return parsedEndpoint{}, fmt.Errorf("endpoint %q: missing socket path (want unix:///absolute/path.sock)", s)
		}
		if !filepath.IsAbs(path) {
			return parsedEndpoint{}, fmt.Errorf("endpoint %q: the socket path must be absolute, i.e. unix:// followed by /path (want unix:///absolute/path.sock)", s)
		}
		path = filepath.Clean(path)
		if len(path) > maxSocketPathBytes {
			return parsedEndpoint{}, fmt.Errorf("endpoint %q: the socket path is %d bytes long, at most %d are possible", s, len(path), maxSocketPathBytes)
		}
		return parsedEndpoint{network: "unix", address: path}, nil
	case strings.HasPrefix(s, tcpScheme):
		addr := strings.TrimPrefix(s, tcpScheme)
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return parsedEndpoint{}, fmt.Errorf("endpoint %q: want tcp://host:port: %w", s, err)
		}
		return parsedEndpoint{network: "tcp", address: addr}, nil
	default:
		return parsedEndpoint{}, fmt.Errorf("endpoint %q: unsupported scheme, want unix:///absolute/path.sock (or tcp://host:port for development)", s)
	}
}

// Listen opens the listener for a driver endpoint.
//
// For unix:///absolute/path it creates the parent directory (mode 0750) if
// missing, removes a stale socket file left by an earlier run, and makes the
// new socket accessible to its owner only (mode 0600). It refuses to remove
// anything that is not a socket, and a socket that still has a server
// behind it. Closing the listener removes the socket file if it is still
// the one Listen created, never a socket another process put there since.
//
// tcp://host:port is for development only: it has no access control at all.
func Listen(endpoint string) (net.Listener, error) {
	e, err := parseEndpoint(endpoint)
	if err != nil {
		return nil, err
	}
	if e.network == "tcp" {
		return net.Listen("tcp", e.address)
	}
	return listenUnix(e.address)
}

func listenUnix(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), socketDirMode); err != nil {
		return nil, fmt.Errorf("creating the socket directory: %w", err)
	}
	if err := removeStaleSocket(path); err != nil {
		return nil, err
	}
	lis, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	// The socket is created with the process umask; tighten it before any
	// caller can see the listener.
	if err := os.Chmod(path, socketFileMode); err != nil {
		_ = lis.Close()
		return nil, fmt.Errorf("restricting the socket's permissions: %w", err)
	}
	own, err := os.Lstat(path)
	if err != nil {
		_ = lis.Close()
		return nil, fmt.Errorf("checking the new socket: %w", err)
	}
	ul := lis.(*net.UnixListener)
	// Go's listener unlinks its path on Close whatever file is there by
	// then, which may be the socket of a driver started since; ownSocket
	// removes the file only if it is still this listener's.
	ul.SetUnlinkOnClose(false)
	return &ownSocketListener{UnixListener: ul, path: path, own: own}, nil
}

// ownSocketListener is a Unix listener that removes its socket file on
// Close only if the file is still the one it created (§2.7).
type ownSocketListener struct {
	*net.UnixListener
	path string
	own  os.FileInfo
}

func (l *ownSocketListener) Close() error {
	err := l.UnixListener.Close()
	removeOwnSocket(l.path, l.own)
	return err
}

// removeStaleSocket removes the socket file a crashed or killed driver left
// behind, so that the new one can bind.
func removeStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("checking the socket path: %w", err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("socket path %s exists and is not a socket (%s); refusing to remove it", path, fi.Mode().Type())
	}
	// A socket with a server behind it is not stale: removing it would cut
	// off a running driver (e.g. a second instance started by mistake).
	if conn, err := net.DialTimeout("unix", path, staleProbeTimeout); err == nil {
		_ = conn.Close()
		return fmt.Errorf("socket %s is in use by another process", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing the stale socket: %w", err)
	}
	return nil
}
