package images_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/machina-io/machina/cmd/internal/images"
	"github.com/machina-io/machina/cmd/internal/manifests"
)

// TestInmemoryDriverImage builds one image as `make images` does (the
// smallest binary: `make images` checks the others the same way when it
// writes them) and checks what was written, then shows that the check
// catches each kind of wrong image.
func TestInmemoryDriverImage(t *testing.T) {
	root, err := manifests.RepoRoot(".")
	require.NoError(t, err)
	want, ok := images.Lookup("machina-driver-inmemory")
	require.True(t, ok)
	meta := images.Meta{Version: "v9.8.7", Revision: "0123abcd", Created: time.Unix(1700000000, 0).UTC(), Arch: runtime.GOARCH}

	binPath, err := images.Compile(t.Context(), root, want, meta.Arch, meta.Version, t.TempDir())
	require.NoError(t, err)
	binary, err := os.ReadFile(binPath)
	require.NoError(t, err)
	built, err := images.New(want, binary, meta)
	require.NoError(t, err)

	out := t.TempDir()
	dir := filepath.Join(out, want.Name)
	require.NoError(t, images.WriteLayout(dir, want.Ref(), built))
	require.NoError(t, images.WriteTarball(dir+".tar", want.Ref(), built))

	img, ref, err := images.ReadLayout(dir)
	require.NoError(t, err)
	assert.Equal(t, "ghcr.io/machina-io/machina-driver-inmemory:"+images.Tag, ref)
	require.NoError(t, images.Check(img, want))

	cf, err := img.ConfigFile()
	require.NoError(t, err)
	assert.Equal(t, []string{"/machina-driver-inmemory"}, cf.Config.Entrypoint)
	assert.Equal(t, "65532:65532", cf.Config.User)
	assert.Equal(t, "v9.8.7", cf.Config.Labels["org.opencontainers.image.version"])
	assert.Equal(t, "0123abcd", cf.Config.Labels["org.opencontainers.image.revision"])
	assert.Equal(t, meta.Created, cf.Created.Time.UTC())
	assert.Equal(t, "linux", cf.OS)
	assert.Equal(t, runtime.GOARCH, cf.Architecture)

	// The tarball holds the same image (config and layer; its manifest is
	// Docker's) under the same name.
	tag, err := name.NewTag(want.Ref())
	require.NoError(t, err)
	fromTar, err := tarball.ImageFromPath(dir+".tar", &tag)
	require.NoError(t, err)
	layoutConfig, err := img.ConfigName()
	require.NoError(t, err)
	tarConfig, err := fromTar.ConfigName()
	require.NoError(t, err)
	assert.Equal(t, layoutConfig, tarConfig)
	require.NoError(t, images.Check(fromTar, want))

	// Building again from the same binary and metadata gives the same
	// image: nothing in it depends on when or where it was built.
	again, err := images.New(want, binary, meta)
	require.NoError(t, err)
	assertSameDigest(t, img, again)

	t.Run("the check catches a wrong image", func(t *testing.T) {
		// A shell next to the binary.
		sh, err := os.ReadFile("/bin/sh")
		require.NoError(t, err)
		shell, err := images.New(images.Image{Name: "bin/sh"}, sh, meta)
		require.NoError(t, err)
		shellLayers, err := shell.Layers()
		require.NoError(t, err)
		withShell, err := mutate.AppendLayers(img, shellLayers...)
		require.NoError(t, err)
		requireProblem(t, withShell, want, `files are ["bin/sh" "machina-driver-inmemory"]`, "2 layers, want 1")

		// Root, and a shell command instead of the binary.
		cf := cf.DeepCopy()
		cf.Config.User = ""
		cf.Config.Entrypoint = []string{"/bin/sh", "-c"}
		cf.Config.Cmd = []string{"/machina-driver-inmemory"}
		delete(cf.Config.Labels, "org.opencontainers.image.revision")
		asRoot, err := mutate.ConfigFile(img, cf)
		require.NoError(t, err)
		requireProblem(t, asRoot, want, `user is "", want "65532:65532"`, `entrypoint is ["/bin/sh" "-c"]`,
			"cmd is", "label org.opencontainers.image.revision is missing")

		// A dynamically linked binary (the host's shell) in its place.
		dynamic, err := images.New(want, sh, meta)
		require.NoError(t, err)
		requireProblem(t, dynamic, want, "dynamically linked")

		// Another image's binary.
		other, ok := images.Lookup("machina-manager")
		require.True(t, ok)
		requireProblem(t, img, other, `files are ["machina-driver-inmemory"], want only "machina-manager"`,
			"no regular file /machina-manager")
	})
}

func assertSameDigest(t *testing.T, want, got v1.Image) {
	t.Helper()
	d1, err := want.Digest()
	require.NoError(t, err)
	d2, err := got.Digest()
	require.NoError(t, err)
	assert.Equal(t, d1, d2)
}

func requireProblem(t *testing.T, img v1.Image, want images.Image, problems ...string) {
	t.Helper()
	err := images.Check(img, want)
	require.Error(t, err)
	for _, p := range problems {
		assert.True(t, strings.Contains(err.Error(), p), "%q not in %v", p, err)
	}
}

// TestListNamesEveryBinary checks that each image's main package exists.
func TestListNamesEveryBinary(t *testing.T) {
	root, err := manifests.RepoRoot(".")
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, img := range images.List {
		assert.False(t, seen[img.Name], "%s twice", img.Name)
		seen[img.Name] = true
		assert.FileExists(t, filepath.Join(root, img.Module, img.Package, "main.go"))
		_, err := name.NewTag(img.Ref(), name.StrictValidation)
		assert.NoError(t, err, img.Ref())
	}
}
