// Package images builds machina's container images without a container
// daemon: each image is one layer, holding one static binary, on an empty
// base, written as an OCI image layout and a `docker load` tarball with
// go-containerregistry. `make images` (hack/images.sh) runs it through the
// machina-images command; docs/operating.md says how to load the result.
//
// The list of images (List) is also what the manifests of deploy/ are
// checked against, so that a manifest never names an image the build does
// not write.
package images
