package machine

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// Limits of the Driver API (§4.2) that the core checks on responses.
const (
	maxProviderIDLength     = 2048
	maxLastKnownStateLength = 64 << 10
	maxAddresses            = 32
	maxAddressLength        = 253
)

// vmInfo is what a successful Create, Initialize or GetMachineStatus told
// about a VM.
type vmInfo struct {
	providerID     string
	nodeName       string
	addresses      []*driverv1alpha1.NodeAddress
	lastKnownState string
}

// validate checks a response against the Driver API's rules (§4.10). An
// invalid response is treated as INTERNAL and nothing of it is stored.
// requireNode is true when the core runs with a target cluster.
func (v vmInfo) validate(requireNode bool) error {
	switch {
	case v.providerID == "":
		return fmt.Errorf("provider_id is empty")
	case len(v.providerID) > maxProviderIDLength:
		return fmt.Errorf("provider_id is %d bytes, more than %d", len(v.providerID), maxProviderIDLength)
	case len(v.lastKnownState) > maxLastKnownStateLength:
		return fmt.Errorf("last_known_state is %d bytes, more than %d", len(v.lastKnownState), maxLastKnownStateLength)
	case len(v.addresses) > maxAddresses:
		return fmt.Errorf("addresses has %d entries, more than %d", len(v.addresses), maxAddresses)
	}
	for i, a := range v.addresses {
		if len(a.GetAddress()) > maxAddressLength {
			return fmt.Errorf("addresses[%d].address is longer than %d bytes", i, maxAddressLength)
		}
	}
	if requireNode || v.nodeName != "" {
		if v.nodeName == "" {
			return fmt.Errorf("node_name is empty")
		}
		if errs := validation.IsDNS1123Subdomain(v.nodeName); len(errs) > 0 {
			return fmt.Errorf("node_name %q is not a DNS-1123 subdomain", v.nodeName)
		}
	}
	return nil
}
