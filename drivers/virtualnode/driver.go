package virtualnode

import (
	"context"
	"errors"
	"log/slog"
	"net"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Driver is the virtualnode driver. It implements the SDK's Driver, Lister
// and VolumeMapper interfaces; Run keeps its Nodes' heartbeats. All methods
// are safe for concurrent use.
type Driver struct {
	opts     Options
	log      *slog.Logger
	clusters *clusters
	kubelets *kubelets
}

// New returns a driver configured by opts.
func New(opts Options) *Driver {
	opts = opts.withDefaults()
	d := &Driver{opts: opts, log: opts.Logger}
	d.kubelets = newKubelets(opts)
	d.clusters = newClusters(opts.Target, opts.KubeAPIQPS, opts.KubeAPIBurst, d.kubelets.addCluster)
	return d
}

// Run is the simulated kubelet of every Node of the driver: it keeps their
// conditions and Leases current until ctx is done (see the package
// documentation), then returns once the beats in flight have ended. It
// starts with the Nodes of the default target cluster, if there is one, and
// adds every cluster a request names. Run may be called once.
func (d *Driver) Run(ctx context.Context) error {
	if d.opts.Target != nil {
		if _, err := d.clusters.defaultCluster(); err != nil {
			return err
		}
	}
	return d.kubelets.run(ctx)
}

// apiError turns an error of the Kubernetes API into a status error with
// the gRPC code that makes the core react right: retry soon for what
// passes, later for what needs a human.
func apiError(err error, action string) error {
	var code codes.Code
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		code = codes.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		code = codes.Canceled
	case apierrors.IsUnauthorized(err):
		code = codes.Unauthenticated
	case apierrors.IsForbidden(err):
		code = codes.PermissionDenied
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		code = codes.InvalidArgument
	case apierrors.IsConflict(err):
		code = codes.Aborted
	case apierrors.IsTimeout(err), apierrors.IsServerTimeout(err), apierrors.IsTooManyRequests(err),
		apierrors.IsServiceUnavailable(err), apierrors.IsInternalError(err):
		code = codes.Unavailable
	case errors.As(err, &netErr):
		code = codes.Unavailable
	case apierrors.ReasonForError(err) != "":
		code = codes.Internal
	default:
		// Not an answer of the API server: most likely it was not reached.
		code = codes.Unavailable
	}
	return status.Errorf(code, "%s: %v", action, err)
}
