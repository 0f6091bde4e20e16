package images

// Registry and Tag are the repository prefix and tag of every image the
// build writes, and the ones deploy/ references.
const (
	Registry = "ghcr.io/machina-io"
	Tag      = "v0.1.0"
)

// Image is one image: the binary it holds and where its main package is.
type Image struct {
	// Name is the image's name under Registry and the binary's file name.
	Name string
	// Module is the directory of the binary's Go module, relative to the
	// repository root; Package its main package, relative to Module.
	Module, Package string
	// Description is the image's org.opencontainers.image.description.
	Description string
}

// Ref is the image's full reference: Registry/Name:Tag.
func (i Image) Ref() string { return Registry + "/" + i.Name + ":" + Tag }

// Entrypoint is the path of the binary inside the image.
func (i Image) Entrypoint() string { return "/" + i.Name }

// List is every image the build writes. The Python reference driver is not
// among them: it needs an interpreter with grpcio and protobuf, which an
// empty base does not have and no Python base image is available to a
// build without network access to a registry (docs/operating.md).
var List = []Image{
	{Name: "machina-manager", Module: "cmd", Package: "./machina-manager",
		Description: "machina's core manager: the machine controllers, talking to one driver over the Driver API"},
	{Name: "machina-node-agent", Module: "cmd", Package: "./machina-node-agent",
		Description: "machina's reference node agent for in-place updates"},
	{Name: "machina-driver-inmemory", Module: "drivers/inmemory", Package: "./cmd/machina-driver-inmemory",
		Description: "machina's inmemory reference driver: VMs in memory, with fault injection"},
	{Name: "machina-driver-virtualnode", Module: "drivers/virtualnode", Package: "./cmd/machina-driver-virtualnode",
		Description: "machina's virtualnode reference driver: each VM is a Node it registers and keeps Ready"},
}

// Lookup returns the image called name.
func Lookup(name string) (Image, bool) {
	for _, i := range List {
		if i.Name == name {
			return i, true
		}
	}
	return Image{}, false
}
