package v1_test

import (
	"bytes"
	"compress/gzip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	mcfgv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
)

func TestDataURL(t *testing.T) {
	for _, in := range []string{"", "hello\n", "a,b;c%d/é", string([]byte{0, 1, 2, 255})} {
		out, err := mcfgv1.DecodeDataURL(mcfgv1.DataURL([]byte(in)))
		require.NoError(t, err)
		assert.Equal(t, in, string(out))
	}
	out, err := mcfgv1.DecodeDataURL("data:text/plain;charset=utf-8;base64,aGkK")
	require.NoError(t, err)
	assert.Equal(t, "hi\n", string(out))
	_, err = mcfgv1.DecodeDataURL("https://example.com/file")
	assert.ErrorContains(t, err, `unsupported URL scheme "https"`)
	_, err = mcfgv1.DecodeDataURL("data:;base64,!!!")
	assert.ErrorContains(t, err, "bad base64")
}

func TestParseIgnition(t *testing.T) {
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, _ = w.Write([]byte("zipped\n"))
	require.NoError(t, w.Close())

	ign, err := mcfgv1.ParseIgnition([]byte(`{"ignition":{"version":"3.5.0"},"storage":{"files":[` +
		`{"path":"/etc/z","mode":384,"contents":{"compression":"gzip","source":"` + mcfgv1.DataURL(gz.Bytes()) + `"}}]}}`))
	require.NoError(t, err)
	data, err := ign.Storage.Files[0].Data()
	require.NoError(t, err)
	assert.Equal(t, "zipped\n", string(data))
	assert.Equal(t, 0o600, ign.Storage.Files[0].FileMode())

	empty, err := mcfgv1.ParseIgnition(nil)
	require.NoError(t, err)
	assert.Empty(t, empty.Storage.Files)

	for config, want := range map[string]string{
		`{"ignition":{"version":"2.2.0"}}`: `unsupported Ignition version "2.2.0"`,
		`{"storage":{}}`:                   "no ignition.version",
		`{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"etc/x"}]}}`:                               "path is not absolute",
		`{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/x","mode":4096}]}}`:                      "invalid mode 4096",
		`{"ignition":{"version":"3.2.0"},"systemd":{"units":[{"name":""}]}}`:                                    "invalid name",
		`{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/x","contents":{"source":"s3://b/k"}}]}}`: "unsupported URL scheme",
	} {
		_, err := mcfgv1.ParseIgnition([]byte(config))
		assert.ErrorContains(t, err, want, config)
	}
}
