package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/internal/process"
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// This file is how a local cluster for a driver of the user's fails fast:
// it watches the driver's socket, the driver's Probe and the machines, and
// stops at the first error that waiting will not fix, saying what it is,
// instead of waiting out --timeout.

// driverGrace is how long a driver the demo started (--driver) may take to
// create its socket, and how long any driver's Probe may answer "not ready"
// or fail, before the demo gives up on it.
const driverGrace = 20 * time.Second

// endpointFileProblem says what is wrong with the file of a unix://
// endpoint (missing, not a socket), or nil; nil for tcp:// endpoints.
func endpointFileProblem(endpoint string) error {
	path, ok := strings.CutPrefix(endpoint, "unix://")
	if !ok {
		return nil
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("driver socket %s does not exist", path)
	case err != nil:
		return fmt.Errorf("driver socket %s: %w", path, err)
	case fi.Mode()&fs.ModeSocket == 0:
		return fmt.Errorf("driver socket %s is not a socket (mode %s)", path, fi.Mode())
	}
	return nil
}

// socketGrace is how long the demo waits for the socket of
// --driver-endpoint to appear, for a driver started at the same moment.
const socketGrace = 10 * time.Second

// waitDriverEndpoint waits up to socketGrace for the socket file of
// --driver-endpoint, and fails naming it when it is still missing or is
// not a socket: the user's driver is not running, or listens elsewhere.
func (d *demo) waitDriverEndpoint(ctx context.Context) error {
	endpoint := d.cfg.driverEndpoint
	if endpoint == "" {
		return nil
	}
	deadline := time.Now().Add(socketGrace)
	for said := false; ; said = true {
		err := endpointFileProblem(endpoint)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: start your driver first, listening on %s (%s=%s)", err, endpoint, driverEndpointEnv, endpoint)
		}
		if !said {
			d.screen.Message("Waiting up to %s for the driver's socket: %v", socketGrace, err)
		}
		if err := sleep(ctx, pollInterval); err != nil {
			return err
		}
	}
}

// waitLocalReady waits until the manager is ready, which includes the
// driver's Probe. It stops at once when the manager or the driver exits,
// when the socket is missing (for --driver, once driverGrace has passed
// without it), when the driver does not serve the Driver API, and when its
// Probe has not said ready for driverGrace.
func (d *demo) waitLocalReady(ctx context.Context, endpoint string) error {
	start := time.Now()
	deadline := start.Add(d.cfg.timeout)
	url := "http://" + d.managerHealth + "/readyz"
	var notReadySince time.Time
	for {
		for _, p := range d.children() {
			if !p.Running() {
				return p.ExitError(25)
			}
		}
		if ok, _, _ := process.ProbeHTTP(ctx, url); ok {
			return nil
		}
		if problem := endpointFileProblem(endpoint); problem != nil {
			if d.driver == nil {
				return fmt.Errorf("%w: is your driver still running?", problem)
			}
			if time.Since(start) > driverGrace {
				return fmt.Errorf("%w: %s has not created it within %s; last lines of its log:\n%s",
					problem, d.cfg.driverPath, driverGrace, d.driver.Tail(20))
			}
		} else {
			answer, terminal := probeDriver(ctx, endpoint)
			switch {
			case terminal:
				return fmt.Errorf("driver at %s: %s", endpoint, answer)
			case answer == "":
				notReadySince = time.Time{}
			case notReadySince.IsZero():
				notReadySince = time.Now()
			case time.Since(notReadySince) > driverGrace:
				return fmt.Errorf("driver at %s has not been ready for %s: its Probe answers %s", endpoint, driverGrace, answer)
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the manager was not ready within %s; last lines of its log:\n%s", d.cfg.timeout, d.manager.Tail(20))
		}
		if err := sleep(ctx, pollInterval); err != nil {
			return err
		}
	}
}

// probeDriver calls the driver's Probe once. It returns "" when the driver
// is ready, else what it answered, and whether that answer is final: a
// server that does not serve the Driver API's Identity service.
func probeDriver(ctx context.Context, endpoint string) (answer string, terminal bool) {
	target := strings.TrimPrefix(endpoint, "tcp://")
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err.Error(), true
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	resp, err := driverv1alpha1.NewIdentityServiceClient(conn).Probe(ctx, &driverv1alpha1.ProbeRequest{})
	switch {
	case status.Code(err) == codes.Unimplemented:
		return "UNIMPLEMENTED to Probe: it does not serve machina.driver.v1alpha1", true
	case err != nil:
		s := status.Convert(err)
		return fmt.Sprintf("%s: %s", s.Code(), s.Message()), false
	case resp.GetReady() != nil && !resp.GetReady().GetValue():
		return "ready=false", false
	}
	return "", false
}

// refusedCodes are the error codes of a create that no retry will fix: the
// driver refused the request (the provider spec, above all) or cannot
// serve it.
var refusedCodes = map[string]bool{
	codes.InvalidArgument.String():    true,
	codes.FailedPrecondition.String(): true,
	codes.PermissionDenied.String():   true,
	codes.Unauthenticated.String():    true,
	codes.OutOfRange.String():         true,
	codes.Unimplemented.String():      true,
}

// refusedMachine returns an error naming the first machine whose creation
// the driver refused, or nil.
func refusedMachine(s *snapshot) error {
	for _, m := range s.machines {
		lo := m.Status.LastOperation
		if lo.Type == v1alpha1.MachineOperationCreate && lo.State == v1alpha1.MachineStateFailed && refusedCodes[lo.ErrorCode] {
			return fmt.Errorf("the driver refused machine %s: %s", m.Name, lo.Description)
		}
	}
	return nil
}
