package sdk

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// endpointFlag is the command-line flag that sets the endpoint.
const endpointFlag = "endpoint"

// Main runs a driver process: it serves d on the endpoint from the
// --endpoint flag, else the MACHINA_DRIVER_ENDPOINT environment variable,
// else DefaultEndpoint, until SIGTERM or SIGINT, and then stops gracefully
// (see Server.Serve). It returns after a clean stop; on any error it prints
// the error to stderr and exits with status 1.
//
// Main defines --endpoint on flag.CommandLine and parses the command line
// unless the program has done so already. A driver that parses its flags
// before calling Main, to configure d, defines a string flag named
// "endpoint" itself; Main then uses its value (empty means the environment
// variable or the default).
func Main(info Info, d Driver, opts ...Option) {
	if err := runMain(info, d, opts); err != nil {
		name := info.Name
		if name == "" {
			name = "driver"
		}
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}

func runMain(info Info, d Driver, opts []Option) error {
	endpoint := endpointFromCommandLine()
	s, err := NewServer(info, d, opts...)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		// Once the first signal started the graceful stop, restore the
		// default handling: a second signal ends the process at once.
		<-ctx.Done()
		stop()
	}()
	return s.Serve(ctx, endpoint)
}

func endpointFromCommandLine() string {
	f := flag.Lookup(endpointFlag)
	if f == nil {
		flag.String(endpointFlag, endpointFromEnv(),
			fmt.Sprintf("Driver API endpoint: unix:///absolute/path.sock, or tcp://host:port for development only (env %s)", EndpointEnv))
		f = flag.Lookup(endpointFlag)
	}
	if !flag.Parsed() {
		flag.Parse()
	}
	if v := f.Value.String(); v != "" {
		return v
	}
	return endpointFromEnv()
}

func endpointFromEnv() string {
	if v := os.Getenv(EndpointEnv); v != "" {
		return v
	}
	return DefaultEndpoint
}
