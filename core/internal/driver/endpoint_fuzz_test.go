package driver

import (
	"strings"
	"testing"
)

// FuzzParseEndpoint parses any --driver-endpoint: no panic; a unix endpoint
// it accepts has an absolute path and a dialer, a tcp one a host:port.
func FuzzParseEndpoint(f *testing.F) {
	for _, s := range []string{"unix:///var/run/machina/driver.sock", "unix://relative.sock", "unix://", "tcp://127.0.0.1:9000",
		"tcp://[::1]:1", "tcp://host", "dns:///x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, endpoint string) {
		target, dialer, err := parseEndpoint(endpoint)
		if err != nil {
			return
		}
		switch {
		case strings.HasPrefix(endpoint, "unix://"):
			if dialer == nil || !strings.HasPrefix(strings.TrimPrefix(endpoint, "unix://"), "/") {
				t.Fatalf("accepted %q without an absolute path and a dialer", endpoint)
			}
		case strings.HasPrefix(endpoint, "tcp://"):
			if target != "passthrough:///"+strings.TrimPrefix(endpoint, "tcp://") {
				t.Fatalf("target %q for %q", target, endpoint)
			}
		default:
			t.Fatalf("accepted %q", endpoint)
		}
	})
}
