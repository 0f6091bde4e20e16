package driver

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// Message size limits. Requests stay far below 4 MiB by the Driver API's
// size limits (provider_spec 256 KiB, secrets 1 MiB, user_data 1 MiB);
// responses may be larger, a ListMachines of a big class above all.
const (
	maxSendMessageSize    = 4 << 20
	maxReceiveMessageSize = 16 << 20
)

// reconnectBackoff retries a lost or refused connection quickly and then
// once a second: dialling a local socket is cheap, and a driver container
// that restarts should be reachable again as soon as it listens.
var reconnectBackoff = backoff.Config{
	BaseDelay:  100 * time.Millisecond,
	Multiplier: 1.6,
	Jitter:     0.2,
	MaxDelay:   time.Second,
}

// Connect dials the driver at endpoint ("unix:///path/to/socket", or
// "tcp://host:port" for development), waits until the driver accepts the
// connection and reports ready, and reads its info and capabilities.
// It waits as long as ctx allows, logging every Options.WaitLogInterval
// that it is still waiting. It fails at once, with ErrNotServed, when the
// driver does not serve this version of the Driver API.
//
// The returned Client reconnects by itself when the driver restarts and
// then reads the driver's capabilities again.
func Connect(ctx context.Context, endpoint string, opts Options) (*Client, error) {
	opts = opts.withDefaults()
	target, dialer, err := parseEndpoint(endpoint)
	if err != nil {
		return nil, err
	}
	c := &Client{
		endpoint: endpoint,
		name:     opts.Name,
		opts:     opts,
		locks:    newMachineLocks(),
	}
	// The metrics are labelled with the driver's name. Without
	// Options.Name it is known only once the driver said it; the calls of
	// the connect sequence go to collectors registered then.
	c.metrics.Store(newClientMetrics())
	if err := c.useMetrics(); err != nil {
		return nil, err
	}
	dialOpts := []grpc.DialOption{
		// The socket is the trust boundary (mode 0600, shared only with the
		// driver container), as for CSI sidecars.
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: reconnectBackoff}),
		// Keep the connection open between calls: an idle channel would
		// hide a driver that went away until the next call.
		grpc.WithIdleTimeout(0),
		grpc.WithDefaultCallOptions(
			grpc.MaxCallSendMsgSize(maxSendMessageSize),
			grpc.MaxCallRecvMsgSize(maxReceiveMessageSize),
		),
		grpc.WithChainUnaryInterceptor(c.interceptors()...),
	}
	if dialer != nil {
		dialOpts = append(dialOpts, grpc.WithContextDialer(dialer))
	}
	conn, err := grpc.NewClient(target, dialOpts...)
	if err != nil {
		return nil, fmt.Errorf("driver endpoint %q: %w", endpoint, err)
	}
	c.conn = conn
	c.identity = driverv1alpha1.NewIdentityServiceClient(conn)
	c.machine = driverv1alpha1.NewMachineServiceClient(conn)

	log := opts.Logger.WithValues("endpoint", endpoint)
	if logger, err := logr.FromContext(ctx); err == nil {
		log = logger.WithValues("endpoint", endpoint)
	}
	id, err := c.start(ctx, log)
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	c.setIdentity(id)
	if c.name == "" {
		c.name = id.info.Name
		if err := c.useMetrics(); err != nil {
			_ = conn.Close()
			return nil, err
		}
	}
	// MCM's counters of this driver's calls start at 0.
	c.metrics.Load().cloudAPI.initialize(c.driverName())
	log = log.WithValues("driver", c.name)
	log.Info("Connected to driver", "driverName", id.info.Name, "version", id.info.VendorVersion, "providers", id.info.Providers, "capabilities", capabilityNames(id.caps))

	watchCtx, stop := context.WithCancel(context.Background())
	c.stopWatch = stop
	c.watchDone = make(chan struct{})
	go c.watch(watchCtx, opts.Logger.WithValues("endpoint", endpoint, "driver", c.name))
	return c, nil
}

// useMetrics registers the client's collectors under its name, or points
// the client at those registered for that name before. Without a name yet
// it does nothing.
func (c *Client) useMetrics() error {
	if c.name == "" {
		return nil
	}
	m, err := registerClientMetrics(c.opts.Registerer, c.name, c.metrics.Load())
	if err != nil {
		return fmt.Errorf("registering driver client metrics: %w", err)
	}
	c.metrics.Store(m)
	return nil
}

// start runs the connect sequence: connection, readiness, identity.
func (c *Client) start(ctx context.Context, log logr.Logger) (identity, error) {
	if err := c.waitConnected(ctx, log); err != nil {
		return identity{}, err
	}
	if err := c.probeUntilReady(ctx, log); err != nil {
		return identity{}, err
	}
	id, err := c.readIdentity(ctx, log)
	if err != nil {
		return identity{}, fmt.Errorf("driver at %s: %w", c.endpoint, err)
	}
	return id, nil
}

// parseEndpoint turns an endpoint into a gRPC target and, for Unix
// sockets, a dialer. The dialer dials the socket path itself rather than
// leaving it to gRPC's resolver, so that the path is used exactly as given.
func parseEndpoint(endpoint string) (string, func(context.Context, string) (net.Conn, error), error) {
	switch {
	case strings.HasPrefix(endpoint, "unix://"):
		path := strings.TrimPrefix(endpoint, "unix://")
		if !strings.HasPrefix(path, "/") {
			return "", nil, fmt.Errorf("driver endpoint %q: the socket path must be absolute (unix:///path)", endpoint)
		}
		dialer := func(ctx context.Context, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}
		// passthrough hands the target to the dialer untouched; the
		// authority sent to the driver is "localhost".
		return "passthrough:///localhost", dialer, nil
	case strings.HasPrefix(endpoint, "tcp://"):
		hostPort := strings.TrimPrefix(endpoint, "tcp://")
		if _, _, err := net.SplitHostPort(hostPort); err != nil {
			return "", nil, fmt.Errorf("driver endpoint %q: %w", endpoint, err)
		}
		return "passthrough:///" + hostPort, nil, nil
	}
	return "", nil, fmt.Errorf("driver endpoint %q: want unix:///path or tcp://host:port", endpoint)
}

// waitConnected waits until the connection is READY. gRPC itself redials
// with backoff; this only watches, and says every WaitLogInterval that it
// is still waiting, since a driver container may start well after the core.
func (c *Client) waitConnected(ctx context.Context, log logr.Logger) error {
	start := time.Now()
	for {
		state := c.conn.GetState()
		switch state {
		case connectivity.Ready:
			return nil
		case connectivity.Idle:
			c.conn.Connect()
		case connectivity.Shutdown:
			return fmt.Errorf("driver at %s: connection closed", c.endpoint)
		}
		waitCtx, cancel := context.WithTimeout(ctx, c.opts.WaitLogInterval)
		changed := c.conn.WaitForStateChange(waitCtx, state)
		cancel()
		if err := ctx.Err(); err != nil {
			if problem := endpointFileProblem(c.endpoint); problem != nil {
				return fmt.Errorf("driver at %s: not reachable: %w: %w", c.endpoint, problem, err)
			}
			return fmt.Errorf("driver at %s: not reachable (%s): %w", c.endpoint, state, err)
		}
		if !changed {
			kv := []any{"state", state.String(), "waited", time.Since(start).Round(time.Second).String()}
			if problem := endpointFileProblem(c.endpoint); problem != nil {
				kv = append(kv, "problem", problem.Error())
			}
			log.Info("Still waiting for driver", kv...)
		}
	}
}

// probeUntilReady calls Probe until the driver says it is ready. A driver
// that is still starting may be unreachable (UNAVAILABLE), slow
// (DEADLINE_EXCEEDED) or not ready yet; any other error is final, as in
// csi-lib-utils: something is wrong that waiting will not fix.
func (c *Client) probeUntilReady(ctx context.Context, log logr.Logger) error {
	var lastLog time.Time
	for {
		ready, err := c.probe(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("driver at %s: not ready: %w", c.endpoint, ctx.Err())
		}
		switch code := Code(err); {
		case err == nil && ready:
			return nil
		case code == codes.Unimplemented:
			return fmt.Errorf("driver at %s: %w (Probe answered UNIMPLEMENTED)", c.endpoint, ErrNotServed)
		case err != nil && code != codes.Unavailable && code != codes.DeadlineExceeded:
			return fmt.Errorf("driver at %s: Probe: %w", c.endpoint, err)
		}
		if time.Since(lastLog) >= c.opts.WaitLogInterval {
			lastLog = time.Now()
			if err != nil {
				log.Info("Still waiting for driver to become ready", "code", Code(err).String(), "error", err.Error())
			} else {
				log.Info("Still waiting for driver to become ready", "ready", false)
			}
		}
		t := time.NewTimer(c.opts.ProbeInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("driver at %s: not ready: %w", c.endpoint, ctx.Err())
		case <-t.C:
		}
	}
}
