// Package sdktest helps a Go driver's tests reach the driver the way the
// core does: through the SDK's server on a real Unix socket, so that request
// validation, capability gating and error codes are part of what is tested.
// It has no dependencies beyond the SDK's own.
package sdktest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
	"github.com/machina-io/machina/sdk"
)

// startTimeout bounds the wait for a served driver to answer; generous
// because tests run on busy CI machines.
const startTimeout = 30 * time.Second

// Serve serves srv on a Unix socket in a new temporary directory until the
// test ends, and returns a client connection to it once the server answers
// GetPluginInfo. When the test ends the connection is closed and the server
// stops gracefully; an error from Server.Serve fails the test.
//
// The directory comes from os.MkdirTemp rather than t.TempDir because a
// socket path has a limit of 108 bytes, which t.TempDir's long names can
// exceed.
func Serve(t testing.TB, srv *sdk.Server) *grpc.ClientConn {
	t.Helper()
	dir, err := os.MkdirTemp("", "sdk")
	if err != nil {
		t.Fatalf("sdktest: creating the socket directory: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	endpoint := "unix://" + filepath.Join(dir, "driver.sock")

	ctx, cancel := context.WithCancel(context.Background())
	var serveErr error
	stopped := make(chan struct{})
	go func() {
		serveErr = srv.Serve(ctx, endpoint)
		close(stopped)
	}()
	t.Cleanup(func() {
		cancel()
		<-stopped
		if serveErr != nil {
			t.Errorf("sdktest: serving the driver: %v", serveErr)
		}
	})

	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("sdktest: connecting to %s: %v", endpoint, err)
	}
	// Registered after the server's cleanup, so it runs first: the
	// connection closes before the server waits for its calls to end.
	t.Cleanup(func() { _ = conn.Close() })

	identity := driverv1alpha1.NewIdentityServiceClient(conn)
	deadline := time.Now().Add(startTimeout)
	for {
		callCtx, callCancel := context.WithTimeout(context.Background(), time.Second)
		_, err := identity.GetPluginInfo(callCtx, &driverv1alpha1.GetPluginInfoRequest{})
		callCancel()
		if err == nil {
			return conn
		}
		select {
		case <-stopped:
			t.Fatalf("sdktest: the server stopped before it answered: %v", serveErr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("sdktest: the driver did not answer GetPluginInfo within %s: %v", startTimeout, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
