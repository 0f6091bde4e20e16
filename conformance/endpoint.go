package conformance

import (
	"context"
	"fmt"
	"net"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// parseEndpoint splits a driver endpoint (§2) into a network and an address
// for net.Dial: unix:///abs/path (or unix:/abs/path) and tcp://host:port.
func parseEndpoint(endpoint string) (network, address string, err error) {
	switch {
	case strings.HasPrefix(endpoint, "unix://"):
		network, address = "unix", strings.TrimPrefix(endpoint, "unix://")
	case strings.HasPrefix(endpoint, "unix:"):
		network, address = "unix", strings.TrimPrefix(endpoint, "unix:")
	case strings.HasPrefix(endpoint, "tcp://"):
		network, address = "tcp", strings.TrimPrefix(endpoint, "tcp://")
		if _, _, err := net.SplitHostPort(address); err != nil {
			return "", "", fmt.Errorf("endpoint %q: want tcp://host:port: %w", endpoint, err)
		}
	default:
		return "", "", fmt.Errorf("endpoint %q: want unix:///path/to/socket or tcp://host:port", endpoint)
	}
	if address == "" {
		return "", "", fmt.Errorf("endpoint %q has no address", endpoint)
	}
	if network == "unix" && !strings.HasPrefix(address, "/") {
		return "", "", fmt.Errorf("endpoint %q: the socket path must be absolute (unix:///path)", endpoint)
	}
	return network, address, nil
}

// dialer returns a context dialer for the endpoint, used both by the gRPC
// client and by the raw HTTP/2 client of the deadline test.
func dialer(endpoint string) (func(ctx context.Context, _ string) (net.Conn, error), error) {
	network, address, err := parseEndpoint(endpoint)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, address)
	}, nil
}

// connect creates a gRPC client connection to the endpoint. The connection
// is lazy: the first call dials.
func connect(endpoint string) (*grpc.ClientConn, error) {
	dial, err := dialer(endpoint)
	if err != nil {
		return nil, err
	}
	return grpc.NewClient("passthrough:///driver",
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(dial),
		// Unix sockets have no host name; "localhost" is what CSI sidecars
		// send too.
		grpc.WithAuthority("localhost"),
	)
}
