package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
)

// Cluster is an API server the Checker probes.
type Cluster struct {
	// Name says which cluster it is ("control", "target") in logs, the
	// gate's reason and lastOperation texts.
	Name string
	// Config reaches the cluster's API server.
	Config *rest.Config
}

// prober asks one API server whether it is there.
type prober struct {
	name    string
	client  rest.Interface
	timeout time.Duration
}

func newProber(c Cluster, timeout time.Duration) (*prober, error) {
	cfg := rest.CopyConfig(c.Config)
	// A probe must not queue behind the manager's own requests or wait out
	// client-side throttling: it measures the API server, not the client.
	cfg.RateLimiter = nil
	cfg.QPS, cfg.Burst = -1, 0
	cfg.GroupVersion = &schema.GroupVersion{}
	cfg.APIPath = "/"
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(nil).WithoutConversion()
	rc, err := rest.UnversionedRESTClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s cluster: building REST client: %w", c.Name, err)
	}
	return &prober{name: c.Name, client: rc, timeout: timeout}, nil
}

// probe GETs /readyz once, without client-side retries. Any answer of the
// API server other than a server error counts as reachable: a 401 or 403
// means the server is up but does not let us see its readiness, which is
// not an outage. A server error (5xx, e.g. etcd gone) or no answer at all
// is one.
func (p *prober) probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	_, err := p.client.Get().AbsPath("/readyz").MaxRetries(0).DoRaw(ctx)
	if err == nil {
		return nil
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		if code := status.Status().Code; code != 0 && code < http.StatusInternalServerError {
			return nil
		}
	}
	return err
}
