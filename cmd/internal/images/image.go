package images

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// User is the user and group every image runs as: not root, and the
// "nonroot" ID of distroless images, which deploy/ also sets as
// runAsUser. The empty base has no /etc/passwd, so it is numeric.
const User = "65532:65532"

// Source is the org.opencontainers.image.source label.
const Source = "https://github.com/machina-io/machina"

// Meta describes a build: what every image's labels and timestamps say.
type Meta struct {
	// Version and Revision (the commit) go into the OCI labels.
	Version, Revision string
	// Created is the image's creation time and the binary's modification
	// time in the layer; the commit's time keeps a rebuild identical.
	Created time.Time
	// Arch is the GOARCH the binary was built for.
	Arch string
}

// New assembles img's image: one layer holding binary (the executable's
// contents) at img.Entrypoint(), owned by root and not writable by the
// user the image runs as, on an empty base.
func New(img Image, binary []byte, meta Meta) (v1.Image, error) {
	layerTar, err := singleFileTar(img.Name, binary, meta.Created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("%s: layer: %w", img.Name, err)
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	withLayer, err := mutate.Append(base, mutate.Addendum{
		Layer:     layer,
		History:   v1.History{Created: v1.Time{Time: meta.Created}, CreatedBy: "machina-images: " + img.Entrypoint(), Comment: "static Go binary"},
		MediaType: types.OCILayer,
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", img.Name, err)
	}
	cf, err := withLayer.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS = "linux"
	cf.Architecture = meta.Arch
	cf.Created = v1.Time{Time: meta.Created}
	cf.Config = v1.Config{
		Entrypoint: []string{img.Entrypoint()},
		User:       User,
		WorkingDir: "/",
		Labels: map[string]string{
			"org.opencontainers.image.title":       img.Name,
			"org.opencontainers.image.description": img.Description,
			"org.opencontainers.image.version":     meta.Version,
			"org.opencontainers.image.revision":    meta.Revision,
			"org.opencontainers.image.source":      Source,
			"org.opencontainers.image.created":     meta.Created.UTC().Format(time.RFC3339),
		},
	}
	return mutate.ConfigFile(withLayer, cf)
}

// singleFileTar is a tar archive of one executable file at name.
func singleFileTar(name string, data []byte, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     name,
		Mode:     0o555,
		Size:     int64(len(data)),
		ModTime:  mtime,
		Format:   tar.FormatPAX,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, err
	}
	if _, err := tw.Write(data); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
