package driver

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc/connectivity"
)

// refreshRetryInterval is the pause between two attempts to read the
// identity of a driver that came back but did not answer yet.
const refreshRetryInterval = time.Second

// watch follows the connection's state until ctx ends. gRPC redials a
// lost driver by itself, and calls made meanwhile fail with UNAVAILABLE.
// When the connection is READY again after a loss, the driver may have
// been replaced by another version with other capabilities, so its
// identity is read again.
//
// Nothing is refused while the refresh runs: until it completes, calls are
// gated by the capabilities read before the loss. A driver that dropped a
// capability answers UNIMPLEMENTED itself in that short window.
func (c *Client) watch(ctx context.Context, log logr.Logger) {
	defer close(c.watchDone)
	state := c.conn.GetState()
	// Any state but READY counts as lost: the connection may already have
	// dropped between Connect's last call and this goroutine's start.
	ready := state == connectivity.Ready
	for {
		if state == connectivity.Idle {
			// An idle channel only redials when a call is made; redial now
			// so that a returning driver is noticed without waiting for one.
			c.conn.Connect()
		}
		if !c.conn.WaitForStateChange(ctx, state) {
			return
		}
		state = c.conn.GetState()
		switch {
		case state == connectivity.Shutdown:
			return
		case state == connectivity.Ready && !ready:
			ready = true
			log.Info("Reconnected to driver")
			c.refreshIdentity(ctx, log)
		case state != connectivity.Ready && ready:
			ready = false
			log.Info("Lost connection to driver; calls fail with UNAVAILABLE until it is back", "state", state.String())
		}
	}
}

// refreshIdentity reads the driver's info and capabilities again, retrying
// while the connection stays READY. If the connection is lost again first,
// the next reconnect retries.
func (c *Client) refreshIdentity(ctx context.Context, log logr.Logger) {
	for {
		id, err := c.readIdentity(ctx, log)
		if err == nil {
			old := c.Info()
			if id.info.Name != old.Name || id.info.VendorVersion != old.VendorVersion {
				log.Info("Driver changed", "oldDriver", old.Name, "oldVersion", old.VendorVersion, "driver", id.info.Name, "version", id.info.VendorVersion)
			}
			c.setIdentity(id)
			log.Info("Read driver capabilities", "driver", id.info.Name, "capabilities", capabilityNames(id.caps))
			return
		}
		log.Info("Reading driver identity after reconnect failed; retrying", "error", err.Error())
		t := time.NewTimer(refreshRetryInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if c.conn.GetState() != connectivity.Ready {
			return
		}
	}
}
