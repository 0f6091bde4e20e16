package inmemory

import (
	"github.com/machina-io/machina/sdk"
)

// The driver implements every interface of the SDK; the capabilities it
// advertises are narrowed by Options.DisabledCapabilities (see SDKOptions).
var (
	_ sdk.Driver       = (*Driver)(nil)
	_ sdk.Initializer  = (*Driver)(nil)
	_ sdk.Lister       = (*Driver)(nil)
	_ sdk.VolumeMapper = (*Driver)(nil)
	_ sdk.Updater      = (*Driver)(nil)
	_ sdk.Prober       = (*Driver)(nil)
)

// DefaultVersion is the version reported when none is given.
const DefaultVersion = "v0.1.0-dev"

// DefaultProviders are the provider values the driver serves unless
// Options.Providers says otherwise.
var DefaultProviders = []string{"inmemory"}

// Info returns the identity of the inmemory driver at version (DefaultVersion
// when empty).
func Info(version string) sdk.Info {
	if version == "" {
		version = DefaultVersion
	}
	return sdk.Info{Name: Name, Version: version, Providers: DefaultProviders}
}

// SDKOptions returns the server options that match d's configuration: the
// providers it lists, and one sdk.WithoutCapability per disabled
// capability, so that the server neither advertises nor routes those RPCs.
func (d *Driver) SDKOptions() []sdk.Option {
	var opts []sdk.Option
	if len(d.opts.Providers) > 0 {
		opts = append(opts, sdk.WithProviders(d.opts.Providers...))
	}
	for _, c := range d.opts.DisabledCapabilities {
		opts = append(opts, sdk.WithoutCapability(c))
	}
	return opts
}

// NewServer returns an SDK server for d with DefaultVersion, configured by
// d's options followed by opts. Tests of other packages use it to serve the
// driver in-process on a real socket:
//
//	d := inmemory.New(inmemory.Options{})
//	srv, err := inmemory.NewServer(d)
//	go srv.Serve(ctx, "unix://"+socketPath)
func NewServer(d *Driver, opts ...sdk.Option) (*sdk.Server, error) {
	return sdk.NewServer(Info(""), d, append(d.SDKOptions(), opts...)...)
}
