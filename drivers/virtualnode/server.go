package virtualnode

import "github.com/machina-io/machina/sdk"

// The driver implements the required RPCs, ListMachines, GetVolumeIDs and
// UpdateMachine.
// It needs no initialization step, so it is no sdk.Initializer.
var (
	_ sdk.Driver       = (*Driver)(nil)
	_ sdk.Lister       = (*Driver)(nil)
	_ sdk.VolumeMapper = (*Driver)(nil)
	_ sdk.Updater      = (*Driver)(nil)
)

// DefaultProviders are the MachineClass provider values the driver
// serves unless --providers says otherwise.
var DefaultProviders = []string{"virtualnode"}

// Info returns the identity of the virtualnode driver at version
// (DefaultVersion when empty).
func Info(version string) sdk.Info {
	if version == "" {
		version = DefaultVersion
	}
	return sdk.Info{Name: Name, Version: version, Providers: DefaultProviders}
}
