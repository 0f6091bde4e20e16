package sdk

import (
	"context"
	"maps"
	"slices"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// identityService answers IdentityService from the server's Info,
// capabilities and the driver's optional Prober.
type identityService struct {
	driverv1alpha1.UnimplementedIdentityServiceServer
	s *Server
}

func (i identityService) GetPluginInfo(context.Context, *driverv1alpha1.GetPluginInfoRequest) (*driverv1alpha1.GetPluginInfoResponse, error) {
	return &driverv1alpha1.GetPluginInfoResponse{
		Name:          i.s.info.Name,
		VendorVersion: i.s.info.Version,
		Manifest:      maps.Clone(i.s.info.Manifest),
		Providers:     slices.Clone(i.s.info.Providers),
	}, nil
}

func (i identityService) GetPluginCapabilities(context.Context, *driverv1alpha1.GetPluginCapabilitiesRequest) (*driverv1alpha1.GetPluginCapabilitiesResponse, error) {
	resp := &driverv1alpha1.GetPluginCapabilitiesResponse{}
	for _, t := range i.s.caps {
		resp.Capabilities = append(resp.Capabilities, &driverv1alpha1.Capability{Type: t})
	}
	return resp, nil
}

func (i identityService) Probe(ctx context.Context, _ *driverv1alpha1.ProbeRequest) (*driverv1alpha1.ProbeResponse, error) {
	p, ok := i.s.driver.(Prober)
	if !ok {
		return &driverv1alpha1.ProbeResponse{Ready: wrapperspb.Bool(true)}, nil
	}
	ready, err := p.Probe(ctx)
	if err != nil {
		return nil, err
	}
	return &driverv1alpha1.ProbeResponse{Ready: wrapperspb.Bool(ready)}, nil
}
