package mcrender

// SupportedExtensions are the OS extensions a MachineConfig may list: those
// of MCO's SupportedExtensions (pkg/controller/common/helpers.go; the same
// eight its e2e test test/e2e-2of2/extension_test.go installs). A rendering
// with any other is refused, as MCO refuses it (the daemon's
// "invalid extensions found").
var SupportedExtensions = []string{
	"two-node-ha",
	"wasm",
	"ipsec",
	"usbguard",
	"kerberos",
	"kernel-devel",
	"sandboxed-containers",
	"sysstat",
}

// The kernel types of MachineConfigSpec.KernelType, and the extension that
// needs the default one.
const (
	kernelDefault        = "default"
	kernelRealtime       = "realtime"
	kernel64kPages       = "64k-pages"
	extensionKernelDevel = "kernel-devel"
)
