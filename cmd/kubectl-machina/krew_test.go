package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"text/template"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// TestKrewManifest renders deploy/krew/machina.yaml as krew-release-bot
// does (the tag, and each addURIAndSha call replaced by uri and sha256) and
// checks that the result is a krew Plugin whose every platform runs this
// binary from an archive of the release.
func TestKrewManifest(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "deploy", "krew", "machina.yaml"))
	require.NoError(t, err)
	const tag = "v1.2.3"
	tmpl, err := template.New("krew").Funcs(template.FuncMap{
		"addURIAndSha": func(uri, tag string) (string, error) {
			u, err := template.New("uri").Parse(uri)
			if err != nil {
				return "", err
			}
			var b bytes.Buffer
			if err := u.Execute(&b, map[string]string{"TagName": tag}); err != nil {
				return "", err
			}
			return fmt.Sprintf("uri: %s\n    sha256: %s", b.String(), strings.Repeat("ab", 32)), nil
		},
	}).Parse(string(raw))
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, tmpl.Execute(&out, map[string]string{"TagName": tag}))

	var plugin struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Spec struct {
			Version          string `json:"version"`
			Homepage         string `json:"homepage"`
			ShortDescription string `json:"shortDescription"`
			Description      string `json:"description"`
			Platforms        []struct {
				Selector struct {
					MatchLabels map[string]string `json:"matchLabels"`
				} `json:"selector"`
				URI    string `json:"uri"`
				Sha256 string `json:"sha256"`
				Bin    string `json:"bin"`
			} `json:"platforms"`
		} `json:"spec"`
	}
	require.NoError(t, yaml.UnmarshalStrict(out.Bytes(), &plugin), "rendered:\n%s", out.String())
	assert.Equal(t, "krew.googlecontainertools.github.com/v1alpha2", plugin.APIVersion)
	assert.Equal(t, "Plugin", plugin.Kind)
	assert.Equal(t, "machina", plugin.Metadata.Name, "kubectl-machina runs as `kubectl machina`")
	assert.Equal(t, tag, plugin.Spec.Version)
	assert.NotEmpty(t, plugin.Spec.ShortDescription)
	assert.NotEmpty(t, plugin.Spec.Description)
	assert.NotEmpty(t, plugin.Spec.Homepage)
	require.NotEmpty(t, plugin.Spec.Platforms)
	for _, p := range plugin.Spec.Platforms {
		os, arch := p.Selector.MatchLabels["os"], p.Selector.MatchLabels["arch"]
		assert.Contains(t, p.URI, "/releases/download/"+tag+"/kubectl-machina_"+tag+"_"+os+"_"+arch+".", "%s/%s", os, arch)
		assert.Len(t, p.Sha256, 64)
		want := "kubectl-machina"
		if os == "windows" {
			want += ".exe"
		}
		assert.Equal(t, want, p.Bin, "%s/%s", os, arch)
	}
}
