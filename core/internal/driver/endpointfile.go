package driver

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// endpointFileProblem says what is wrong with the file of a Unix socket
// endpoint: missing, not a socket, or not readable. It returns nil for a
// socket file and for TCP endpoints, whose problems only a dial can tell.
// gRPC reports all of these as TRANSIENT_FAILURE alone; the manager's logs,
// errors and readiness check name the file instead, so that a wrong path
// between the manager's and the driver's containers is seen at once.
func endpointFileProblem(endpoint string) error {
	path, ok := strings.CutPrefix(endpoint, "unix://")
	if !ok {
		return nil
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("socket file %s does not exist: is the driver running, with the same endpoint and a shared volume?", path)
	case err != nil:
		return fmt.Errorf("socket file %s: %w", path, err)
	case fi.Mode()&fs.ModeSocket == 0:
		return fmt.Errorf("%s is not a socket but %s: the driver listens on another path, or something else is in its place", path, fileKind(fi.Mode()))
	}
	return nil
}

// fileKind names the kind of a file that is not a socket.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "a file of mode " + m.Type().String()
}
