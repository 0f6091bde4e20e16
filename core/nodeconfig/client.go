package nodeconfig

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
)

// Client reads a node's rendered MachineConfigs and their pools from a
// Server, as a client.Reader that knows those two kinds and only Get. It
// authenticates with the bearer token of a REST configuration (re-read
// from its file, so a kubelet-rotated ServiceAccount token keeps working)
// and trusts the certificates of the servers' ConfigMap, read again for
// every request (a replica that restarted has a new one; reads are rare:
// one per rendered configuration).
type Client struct {
	base   *url.URL
	ca     types.NamespacedName
	api    client.Reader
	token  *rest.Config
	client *http.Client
}

// NewClient returns a client of the server at base (https://host:port),
// which trusts the certificates in the ConfigMap ca, read through api, and
// sends the bearer token of cfg.
func NewClient(base string, ca types.NamespacedName, api client.Reader, cfg *rest.Config) (*Client, error) {
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("node configuration server %q: want https://host:port", base)
	}
	if cfg.BearerToken == "" && cfg.BearerTokenFile == "" {
		return nil, errors.New("the node configuration server authenticates a ServiceAccount token, " +
			"and the agent's credentials hold none")
	}
	return &Client{base: u, ca: ca, api: api, token: cfg, client: &http.Client{Timeout: 30 * time.Second}}, nil
}

var _ client.Reader = (*Client)(nil)

// Get reads the rendered MachineConfig or the MachineConfigPool key names.
// Not found is an API NotFound error, a refusal an API Forbidden one
// (with the server's reason), as if read from the API server.
func (c *Client) Get(ctx context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	var path string
	var gr schema.GroupResource
	switch obj.(type) {
	case *mcv1.MachineConfig:
		path, gr = machineConfigsPath, schema.GroupResource{Group: group, Resource: "machineconfigs"}
	case *mcv1.MachineConfigPool:
		path, gr = poolsPath, schema.GroupResource{Group: group, Resource: "machineconfigpools"}
	default:
		return fmt.Errorf("the node configuration server serves no %T", obj)
	}
	roots, err := trustBundle(ctx, c.api, c.ca)
	if err != nil {
		return err
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots}}
	defer tr.CloseIdleConnections()
	rt, err := transport.NewBearerAuthWithRefreshRoundTripper(c.token.BearerToken, c.token.BearerTokenFile, tr)
	if err != nil {
		return fmt.Errorf("reading the agent's token: %w", err)
	}
	hc := *c.client
	hc.Transport = rt

	u := c.base.JoinPath(path + url.PathEscape(key.Name))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("reading %s %s from the node configuration server: %w", gr.Resource, key.Name, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return fmt.Errorf("reading %s %s from the node configuration server: %w", gr.Resource, key.Name, err)
	}
	reason := strings.TrimSpace(string(body))
	switch resp.StatusCode {
	case http.StatusOK:
		if err := json.Unmarshal(body, obj); err != nil {
			return fmt.Errorf("decoding %s %s from the node configuration server: %w", gr.Resource, key.Name, err)
		}
		return nil
	case http.StatusNotFound:
		return apierrors.NewNotFound(gr, key.Name)
	case http.StatusForbidden, http.StatusUnauthorized:
		return apierrors.NewForbidden(gr, key.Name, errors.New(reason))
	default:
		return fmt.Errorf("reading %s %s from the node configuration server: %s: %s", gr.Resource, key.Name, resp.Status, reason)
	}
}

// List is not served: an agent reads by name only.
func (c *Client) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("the node configuration server serves reads by name only")
}

// maxBody bounds what the client reads: a MachineConfig is stored in etcd,
// whose objects are at most a few MiB.
const maxBody = 8 << 20
