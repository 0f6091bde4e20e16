package images

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Compile builds the image's binary for linux/arch as a static executable
// (CGO_ENABLED=0: the image has no C library) into dir and returns its
// path. version goes into the binary's main.version, as the -version flag
// and the drivers' GetPluginInfo report it.
func Compile(ctx context.Context, root string, img Image, arch, version, dir string) (string, error) {
	out := filepath.Join(dir, img.Name)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath",
		"-ldflags", "-s -w -X main.version="+version,
		"-o", out, img.Package)
	// From the module's own directory: the workspace (go.work) resolves
	// the repository's modules as for every other build.
	cmd.Dir = filepath.Join(root, img.Module)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build %s (in %s): %w\n%s", img.Package, img.Module, err, output.String())
	}
	return out, nil
}
