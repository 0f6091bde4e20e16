package sdk

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"time"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
	"google.golang.org/grpc"
)

// Message size limits. The Driver API caps requests at 4 MiB and responses
// at 16 MiB. The server accepts requests up to 16 MiB, a margin over the
// contract that costs nothing on a socket only the core can reach.
const (
	maxRecvMsgSize  = 16 << 20
	maxResponseSize = 16 << 20
)

// Server serves the Driver API (IdentityService and MachineService) for one
// Driver on one endpoint.
type Server struct {
	info    Info
	driver  Driver
	opts    options
	caps    []driverv1alpha1.Capability_Type
	metrics *grpcprom.ServerMetrics
	grpc    *grpc.Server
	served  atomic.Bool
}

// NewServer validates info and returns a Server for d. The optional
// interfaces d implements (Initializer, Lister, VolumeMapper, Updater) decide the
// advertised capabilities, minus those hidden with WithoutCapability.
func NewServer(info Info, d Driver, opts ...Option) (*Server, error) {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if o.providers != nil {
		info.Providers = o.providers
	}
	if err := info.Validate(); err != nil {
		return nil, err
	}
	if d == nil {
		return nil, errors.New("driver is nil")
	}
	s := &Server{info: info, driver: d, opts: o}
	s.caps = capabilitiesOf(d, s.opts.hidden)
	m, err := newMetrics(s.opts.registerer)
	if err != nil {
		return nil, err
	}
	s.metrics = m
	s.grpc = grpc.NewServer(
		grpc.ChainUnaryInterceptor(s.interceptors()...),
		grpc.MaxRecvMsgSize(maxRecvMsgSize),
		grpc.MaxSendMsgSize(maxResponseSize),
	)
	driverv1alpha1.RegisterIdentityServiceServer(s.grpc, identityService{s: s})
	driverv1alpha1.RegisterMachineServiceServer(s.grpc, machineService{d: d})
	// Every method shows up in the metrics from the start, with zero counts.
	m.InitializeMetrics(s.grpc)
	return s, nil
}

// Serve listens on endpoint (see Listen) and serves until ctx is done or
// serving fails. When ctx is done, it stops accepting connections and lets
// the calls in flight finish, for at most the grace period (WithGracePeriod);
// then it closes the remaining connections. It removes the socket file
// before it returns, and returns nil after a stop through ctx.
//
// A Server serves once: a second call to Serve returns an error.
func (s *Server) Serve(ctx context.Context, endpoint string) error {
	if !s.served.CompareAndSwap(false, true) {
		return errors.New("the server has already served; create a new one")
	}
	ep, err := parseEndpoint(endpoint)
	if err != nil {
		return err
	}
	lis, err := Listen(endpoint)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", endpoint, err)
	}
	var socket os.FileInfo
	if ep.network == "unix" {
		socket, _ = os.Lstat(ep.address)
		defer removeOwnSocket(ep.address, socket)
	} else {
		s.opts.logger.Warn("serving the Driver API on TCP: anyone who can reach the port can manage machines; use a unix:// endpoint outside development",
			"endpoint", endpoint)
	}
	s.opts.logger.Info("serving the Driver API", "endpoint", endpoint, "driver", s.info.Name,
		"version", s.info.Version, "capabilities", capabilityNames(s.caps))
	return s.serve(ctx, lis)
}

func (s *Server) serve(ctx context.Context, lis net.Listener) error {
	served := make(chan error, 1)
	go func() { served <- s.grpc.Serve(lis) }()

	select {
	case err := <-served:
		s.grpc.Stop()
		return fmt.Errorf("serving the Driver API: %w", err)
	case <-ctx.Done():
	}

	s.opts.logger.Info("stopping: no new calls, waiting for calls in flight", "gracePeriod", s.opts.gracePeriod)
	stopped := make(chan struct{})
	go func() {
		s.grpc.GracefulStop()
		close(stopped)
	}()
	timer := time.NewTimer(s.opts.gracePeriod)
	defer timer.Stop()
	select {
	case <-stopped:
	case <-timer.C:
		s.opts.logger.Warn("grace period is over, cancelling the calls still in flight", "gracePeriod", s.opts.gracePeriod)
		s.grpc.Stop()
		<-stopped
	}
	// After a stop, grpc.Server.Serve returns nil.
	if err := <-served; err != nil {
		return fmt.Errorf("serving the Driver API: %w", err)
	}
	s.opts.logger.Info("stopped")
	return nil
}

// removeOwnSocket removes the socket file at path if it is still the one
// this server created. Closing a Unix listener normally removes it already;
// this covers the rest without touching a socket a successor process may
// have created since.
func removeOwnSocket(path string, own os.FileInfo) {
	if own == nil {
		return
	}
	if now, err := os.Lstat(path); err == nil && os.SameFile(own, now) {
		_ = os.Remove(path)
	}
}

func capabilityNames(caps []driverv1alpha1.Capability_Type) []string {
	names := make([]string, len(caps))
	for i, c := range caps {
		names[i] = c.String()
	}
	return names
}
