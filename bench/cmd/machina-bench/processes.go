package main

import (
	"context"
	"net"
	"strconv"
	"time"

	"github.com/machina-io/machina/internal/process"
)

// startChild starts the manager or the driver, path with args, its output
// going to logPath. The child gets its own process group (stopping signals
// it as a whole) and is killed when the benchmark dies.
func startChild(name, path, logPath string, args ...string) (*process.Process, error) {
	return process.Start(process.Config{Name: name, Path: path, Args: args, LogPath: logPath, Group: true})
}

// freeAddress returns a loopback address with a port that is free now.
func freeAddress() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port), nil
}

// sleep waits for d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
