package images

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"slices"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// ReadLayout reads the one image of the OCI layout in dir and the
// reference its index names it by.
func ReadLayout(dir string) (v1.Image, string, error) {
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, "", fmt.Errorf("reading the OCI layout %s: %w", dir, err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, "", err
	}
	if len(m.Manifests) != 1 {
		return nil, "", fmt.Errorf("the OCI layout %s holds %d manifests, want 1", dir, len(m.Manifests))
	}
	desc := m.Manifests[0]
	img, err := idx.Image(desc.Digest)
	if err != nil {
		return nil, "", fmt.Errorf("reading the image of %s: %w", dir, err)
	}
	return img, desc.Annotations[annotationContainerdRef], nil
}

// Check verifies that image is what New makes of want: linux, the
// binary as entrypoint, the non-root user, the OCI labels, and one layer
// holding exactly one file, the binary, statically linked (no shell, no C
// library, nothing else). It returns every problem it finds.
func Check(image v1.Image, want Image) error {
	var problems []error
	fail := func(format string, args ...any) { problems = append(problems, fmt.Errorf(format, args...)) }

	cf, err := image.ConfigFile()
	if err != nil {
		return fmt.Errorf("%s: reading the config: %w", want.Name, err)
	}
	if cf.OS != "linux" {
		fail("OS is %q, want linux", cf.OS)
	}
	if !slices.Equal(cf.Config.Entrypoint, []string{want.Entrypoint()}) {
		fail("entrypoint is %q, want [%q]", cf.Config.Entrypoint, want.Entrypoint())
	}
	if len(cf.Config.Cmd) != 0 {
		fail("cmd is %q, want none", cf.Config.Cmd)
	}
	if cf.Config.User != User {
		fail("user is %q, want %q", cf.Config.User, User)
	}
	for _, label := range []string{"org.opencontainers.image.title", "org.opencontainers.image.version",
		"org.opencontainers.image.revision", "org.opencontainers.image.source"} {
		if cf.Config.Labels[label] == "" {
			fail("label %s is missing", label)
		}
	}
	if got := cf.Config.Labels["org.opencontainers.image.title"]; got != "" && got != want.Name {
		fail("label org.opencontainers.image.title is %q, want %q", got, want.Name)
	}

	layers, err := image.Layers()
	if err != nil {
		return fmt.Errorf("%s: reading the layers: %w", want.Name, err)
	}
	if len(layers) != 1 {
		fail("%d layers, want 1", len(layers))
	}
	files, hdr, binary, err := flatten(image, want.Name)
	if err != nil {
		return fmt.Errorf("%s: reading the file system: %w", want.Name, err)
	}
	if !slices.Equal(files, []string{want.Name}) {
		fail("files are %q, want only %q", files, want.Name)
	}
	switch {
	case hdr == nil:
		fail("no regular file %s", want.Entrypoint())
	case hdr.Mode&0o111 == 0 || hdr.Mode&0o222 != 0 || hdr.Uid != 0:
		fail("%s has mode %o and owner %d, want executable, read-only and owned by root", want.Entrypoint(), hdr.Mode, hdr.Uid)
	}
	if hdr != nil {
		if err := checkStatic(binary, cf.Architecture); err != nil {
			fail("%s: %w", want.Entrypoint(), err)
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("image %s: %w", want.Name, errors.Join(problems...))
	}
	return nil
}

// flatten lists every entry of image's file system (directories, links and
// whiteouts included) and returns the header and contents of the regular
// file at binary (a nil header when there is none).
func flatten(image v1.Image, binary string) ([]string, *tar.Header, []byte, error) {
	rc := mutate.Extract(image)
	defer rc.Close()
	tr := tar.NewReader(rc)
	var files []string
	var found *tar.Header
	var data []byte
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, nil, err
		}
		files = append(files, hdr.Name)
		if hdr.Name == binary && hdr.Typeflag == tar.TypeReg {
			found = hdr
			if data, err = io.ReadAll(tr); err != nil {
				return nil, nil, nil, err
			}
		}
	}
	slices.Sort(files)
	return files, found, data, nil
}

// goArch maps a GOARCH to its ELF machine.
var goArch = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// checkStatic fails unless data is a linux ELF executable for arch with no
// program interpreter: a static binary, which an image without a C
// library and a dynamic loader can run.
func checkStatic(data []byte, arch string) error {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("not an ELF executable: %w", err)
	}
	defer f.Close()
	if m, ok := goArch[arch]; ok && f.Machine != m {
		return fmt.Errorf("built for %s, the image says %s", f.Machine, arch)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errors.New("dynamically linked (it has a program interpreter); build with CGO_ENABLED=0")
		}
	}
	return nil
}
