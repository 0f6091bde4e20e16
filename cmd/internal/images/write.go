package images

import (
	"fmt"
	"os"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Annotations of the image's entry in the layout's index: the tag (the OCI
// way, which `skopeo copy oci:DIR:TAG` selects by) and the full reference
// (containerd's way, which `ctr images import` names the image by).
const (
	annotationRefName       = "org.opencontainers.image.ref.name"
	annotationContainerdRef = "io.containerd.image.name"
)

// WriteLayout writes image as the only image of a new OCI image layout in
// dir, replacing what dir held.
func WriteLayout(dir, ref string, image v1.Image) error {
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("creating the OCI layout %s: %w", dir, err)
	}
	err = p.AppendImage(image, layout.WithAnnotations(map[string]string{
		annotationRefName:       tag.TagStr(),
		annotationContainerdRef: tag.Name(),
	}))
	if err != nil {
		return fmt.Errorf("writing %s to %s: %w", ref, dir, err)
	}
	return nil
}

// WriteTarball writes image to path as a `docker load` archive tagged ref,
// which docker, podman, `kind load image-archive` and `ctr images import`
// all read.
func WriteTarball(path, ref string, image v1.Image) error {
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return err
	}
	if err := tarball.WriteToFile(path, tag, image); err != nil {
		return fmt.Errorf("writing %s to %s: %w", ref, path, err)
	}
	return nil
}
