// Command machina-images builds machina's container images without a
// container daemon (package images) and checks each one it wrote. `make
// images` runs it through hack/images.sh; by default it builds every image
// into bin/images:
//
//	bin/images/<name>/      an OCI image layout (crane, skopeo, oras)
//	bin/images/<name>.tar   a `docker load` archive (docker, podman, kind, ctr)
//
// Arguments name a subset of the images.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/machina-io/machina/cmd/internal/images"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(os.Stderr, "machina-images: %v\n", err)
		}
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("machina-images", flag.ContinueOnError)
	root := fs.String("repo", ".", "root of the machina repository")
	out := fs.String("out", "bin/images", "directory to write the images to")
	version := fs.String("version", images.Tag, "version for the binaries' -version and the images' labels")
	revision := fs.String("revision", "unknown", "commit the images are built from (label org.opencontainers.image.revision)")
	created := fs.Int64("created", 0, "creation time in Unix seconds (the commit's time keeps rebuilds identical; default SOURCE_DATE_EPOCH, else 0)")
	arch := fs.String("arch", runtime.GOARCH, "GOARCH to build for (the images are linux/<arch>)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: machina-images [flags] [image ...]\n\nImages:")
		for _, i := range images.List {
			fmt.Fprintf(fs.Output(), " %s", i.Name)
		}
		fmt.Fprintf(fs.Output(), "\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *created == 0 {
		if epoch := os.Getenv("SOURCE_DATE_EPOCH"); epoch != "" {
			n, err := strconv.ParseInt(epoch, 10, 64)
			if err != nil {
				return fmt.Errorf("SOURCE_DATE_EPOCH: %w", err)
			}
			*created = n
		}
	}
	selected := images.List
	if fs.NArg() > 0 {
		selected = nil
		for _, n := range fs.Args() {
			img, ok := images.Lookup(n)
			if !ok {
				return fmt.Errorf("no image %q", n)
			}
			selected = append(selected, img)
		}
	}
	meta := images.Meta{Version: *version, Revision: *revision, Created: time.Unix(*created, 0).UTC(), Arch: *arch}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "machina-images-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	for _, img := range selected {
		if err := build(ctx, *root, *out, work, img, meta); err != nil {
			return err
		}
	}
	return nil
}

// build compiles one binary, writes its image as a layout and a tarball,
// and checks the image read back from the layout.
func build(ctx context.Context, root, out, work string, img images.Image, meta images.Meta) error {
	start := time.Now()
	binPath, err := images.Compile(ctx, root, img, meta.Arch, meta.Version, work)
	if err != nil {
		return err
	}
	binary, err := os.ReadFile(binPath)
	if err != nil {
		return err
	}
	image, err := images.New(img, binary, meta)
	if err != nil {
		return err
	}
	dir := filepath.Join(out, img.Name)
	if err := images.WriteLayout(dir, img.Ref(), image); err != nil {
		return err
	}
	if err := images.WriteTarball(dir+".tar", img.Ref(), image); err != nil {
		return err
	}
	written, ref, err := images.ReadLayout(dir)
	if err != nil {
		return err
	}
	if ref != img.Ref() {
		return fmt.Errorf("%s names its image %q, want %q", dir, ref, img.Ref())
	}
	if err := images.Check(written, img); err != nil {
		return err
	}
	digest, err := written.Digest()
	if err != nil {
		return err
	}
	size, err := images.Size(written)
	if err != nil {
		return err
	}
	fmt.Printf("%s linux/%s %s %.1f MiB (%s)\n  %s/\n  %s.tar\n", img.Ref(), meta.Arch, digest, float64(size)/(1<<20),
		time.Since(start).Round(100*time.Millisecond), dir, dir)
	return nil
}
