package v1_test

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"runtime"
	"slices"
	"strconv"
	"strings"
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

func gzipped(t testing.TB, data []byte) []byte {
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, err := w.Write(data)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return gz.Bytes()
}

// FuzzParseIgnition: a MachineConfig's spec.config is user input. Whatever
// it holds, parsing does not panic, and what it accepts is what the node
// agent can write: absolute paths that stay on the node, one-element unit
// names, contents that decode within MaxFileSize.
func FuzzParseIgnition(f *testing.F) {
	for _, seed := range []string{
		`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/etc/a","mode":420,"contents":{"source":"data:,hi"}}]}}`,
		`{"ignition":{"version":"3.2.0"},"systemd":{"units":[{"name":"a.service","enabled":true,"contents":"[Unit]","dropins":[{"name":"b.conf"}]}]}}`,
		`{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/etc/../x"}]}}`,
		`{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/z","contents":{"compression":"gzip","source":"data:;base64,H4sIAAAAAAAA/w=="}}]}}`,
		`null`, ``, `[]`, `{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/x","mode":-1}]}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		ign, err := mcfgv1.ParseIgnition(raw)
		if err != nil {
			return
		}
		for _, file := range ign.Storage.Files {
			if !strings.HasPrefix(file.Path, "/") || slices.Contains(strings.Split(file.Path, "/"), "..") {
				t.Fatalf("accepted path %q", file.Path)
			}
			if m := file.FileMode(); m < 0 || m > 0o7777 {
				t.Fatalf("accepted mode %o", m)
			}
			data, err := file.Data()
			if err != nil || len(data) > mcfgv1.MaxFileSize {
				t.Fatalf("accepted file %s whose data does not decode: %d bytes, %v", file.Path, len(data), err)
			}
		}
		for _, u := range ign.Systemd.Units {
			if u.Name == "" || u.Name == ".." || strings.ContainsRune(u.Name, '/') {
				t.Fatalf("accepted unit name %q", u.Name)
			}
		}
	})
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
		`{"ignition":{"version":"2.4.0"}}`: `unsupported Ignition version "2.4.0"`,
		`{"storage":{}}`:                   "no ignition.version",
		`{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"etc/x"}]}}`:                               "path is not absolute",
		`{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/x","mode":4096}]}}`:                      "invalid mode 4096",
		`{"ignition":{"version":"3.2.0"},"systemd":{"units":[{"name":""}]}}`:                                    "invalid name",
		`{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/x","contents":{"source":"s3://b/k"}}]}}`: "unsupported URL scheme",
		`{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/etc/../../x"}]}}`:                        "leaves the node's file system",
		`{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"//"}]}}`:                                  "names the node's root directory",
		`{"ignition":{"version":"3.2.0"},"systemd":{"units":[{"name":".."}]}}`:                                  "invalid name",
		`{"ignition":{"version":"3.2.0"},"systemd":{"units":[{"name":"a.service","dropins":[{"name":"."}]}]}}`:  "invalid name",
		`{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/big","contents":{"compression":"gzip","source":"` +
			mcfgv1.DataURL(gzipped(t, bytes.Repeat([]byte{0}, mcfgv1.MaxFileSize+1))) + `"}}]}}`: "larger than 16 MiB",
	} {
		_, err := mcfgv1.ParseIgnition([]byte(config))
		assert.ErrorContains(t, err, want, config)
	}
}

// TestParseIgnitionRefusals: every section machina does not apply to a
// running node is refused with its field path, and so is a key the
// Ignition specification does not have; what it applies parses.
func TestParseIgnitionRefusals(t *testing.T) {
	for _, tc := range []struct{ config, refused string }{
		{`"ignition":{"version":"3.5.0","config":{"merge":[{"source":"https://x"}]}}`, "ignition.config"},
		{`"ignition":{"version":"3.5.0","timeouts":{"httpTotal":10}}`, "ignition.timeouts"},
		{`"ignition":{"version":"3.5.0","security":{"tls":{}}}`, ""},
		{`"ignition":{"version":"3.5.0","security":{"tls":{"certificateAuthorities":[{"source":"data:,x"}]}}}`, "ignition.security"},
		{`"ignition":{"version":"3.5.0","proxy":{"httpProxy":"http://p"}}`, "ignition.proxy"},
		{`"ignition":{"version":"3.5.0"},"kernelArguments":{"shouldExist":["nosmt"]}`, "kernelArguments (use the MachineConfig's spec.kernelArguments)"},
		{`"ignition":{"version":"3.5.0"},"passwd":{"groups":[{"name":"g"}]}`, "passwd.groups"},
		{`"ignition":{"version":"3.5.0"},"passwd":{"users":[{"name":"alice"}]}`, `passwd.users[0] (user "alice"`},
		{`"ignition":{"version":"3.5.0"},"passwd":{"users":[{"name":"core","uid":1000,"gecos":"g","homeDir":"/h","noCreateHome":true,"primaryGroup":"p","groups":["wheel"],"noUserGroup":true,"noLogInit":true,"shell":"/bin/sh","shouldExist":true,"system":true}]}`,
			"passwd.users[0].uid"},
		{`"ignition":{"version":"3.5.0"},"passwd":{"users":[{"name":"core","shell":"/bin/zsh"}]}`, "passwd.users[0].shell"},
		{`"ignition":{"version":"3.5.0"},"passwd":{"users":[{"name":"core","groups":["wheel"]}]}`, "passwd.users[0].groups"},
		{`"ignition":{"version":"3.5.0"},"storage":{"directories":[{"path":"/d"}]}`, "storage.directories"},
		{`"ignition":{"version":"3.5.0"},"storage":{"links":[{"path":"/l","target":"/t"}]}`, "storage.links"},
		{`"ignition":{"version":"3.5.0"},"storage":{"raid":[{"name":"r"}]}`, "storage.raid"},
		{`"ignition":{"version":"3.5.0"},"storage":{"filesystems":[{"device":"/dev/sdb"}]}`, "storage.filesystems"},
		{`"ignition":{"version":"3.5.0"},"storage":{"luks":[{"name":"l"}]}`, "storage.luks"},
		{`"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/f","append":[{"source":"data:,x"}]}]}`, "storage.files[0].append"},
		{`"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/f","contents":{"source":"data:,x","httpHeaders":[{"name":"a","value":"b"}]}}]}`, "storage.files[0].contents.httpHeaders"},
		{`"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/f","contents":{"source":"https://example.com/f"}}]}`, `unsupported URL scheme "https"`},
		{`"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/f","mode":420,"colour":"red"}]}`, `unknown field "colour"`},
		{`"ignition":{"version":"3.5.0"},"networkd":{}`, `unknown field "networkd"`},
		{`"ignition":{"version":"2.4.0"}`, `unsupported Ignition version "2.4.0"`},
		// Applied: parses.
		{`"ignition":{"version":"3.5.0"},"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["ssh-ed25519 AAAA"]}]},` +
			`"storage":{"files":[{"path":"/f","mode":384,"overwrite":false,"user":{"name":"core"},"group":{"id":10},` +
			`"contents":{"source":"data:,x","compression":"","verification":{}}}]},` +
			`"systemd":{"units":[{"name":"a.service","enabled":true,"mask":false,"contents":"[Unit]","dropins":[{"name":"b.conf","contents":""}]}]}`, ""},
	} {
		_, err := mcfgv1.ParseIgnition([]byte("{" + tc.config + "}"))
		if tc.refused == "" {
			assert.NoError(t, err, tc.config)
			continue
		}
		assert.ErrorContains(t, err, tc.refused, tc.config)
	}
}

// TestFileVerification: contents.verification.hash is checked against
// the decoded (and decompressed) data.
func TestFileVerification(t *testing.T) {
	data := []byte("server time.example.com\n")
	sum := sha256.Sum256(data)
	sum512 := sha512.Sum512(data)
	src := mcfgv1.DataURL(gzipped(t, data))
	gz := "gzip"
	for hash, ok := range map[string]bool{
		"sha256-" + hex.EncodeToString(sum[:]):    true,
		"sha512-" + hex.EncodeToString(sum512[:]): true,
		"sha256-" + strings.Repeat("0", 64):       false,
		"md5-abc":                                 false,
		"nodash":                                  false,
	} {
		f := mcfgv1.IgnitionFile{Path: "/etc/chrony.conf", Contents: mcfgv1.IgnitionFileContents{Source: &src, Compression: &gz,
			Verification: mcfgv1.IgnitionVerification{Hash: &hash}}}
		got, err := f.Data()
		if ok {
			require.NoError(t, err, hash)
			assert.Equal(t, data, got)
		} else {
			assert.ErrorContains(t, err, "contents.verification.hash", hash)
		}
	}
}

// TestParseIgnitionNodeSide: what would fail on every node is refused at
// render, naming what is wrong: colliding writes, names and paths Linux
// or systemd cannot take, unclean paths, drop-ins systemd never reads, and
// contents that pass the size limits.
func TestParseIgnitionNodeSide(t *testing.T) {
	file := func(p string) string { return `{"path":"` + p + `","contents":{"source":"data:,x"}}` }
	files := func(f ...string) string {
		return `{"ignition":{"version":"3.5.0"},"storage":{"files":[` + strings.Join(f, ",") + `]}}`
	}
	units := func(u string) string { return `{"ignition":{"version":"3.5.0"},"systemd":{"units":[` + u + `]}}` }
	both := func(f, u string) string {
		return `{"ignition":{"version":"3.5.0"},"storage":{"files":[` + f + `]},"systemd":{"units":[` + u + `]}}`
	}
	long := strings.Repeat("a", 256)
	// 66 files of 1 MiB of zeros each: 66 MiB decoded from ~70 KiB.
	var many []string
	for i := range 66 {
		many = append(many, `{"path":"/var/f`+strconv.Itoa(i)+`","contents":{"compression":"gzip","source":"`+
			mcfgv1.DataURL(gzipped(t, make([]byte, 1<<20)))+`"}}`)
	}
	for config, want := range map[string]string{
		files(file("/etc/a"), file("/etc/a")):                                                                             "file /etc/a is defined twice (storage.files[0] and storage.files[1])",
		files(file("/etc/a"), file("/etc/a.conf"), file("/etc/a/b")):                                                      "storage.files[0] writes /etc/a, which storage.files[2] needs to be a directory for /etc/a/b",
		both(file("/etc/systemd/system/a.service"), `{"name":"a.service","contents":"[Unit]"}`):                           "storage.files[0] and systemd.units (a.service) both write",
		both(file("/etc/systemd/system/a.service"), `{"name":"a.service","mask":true}`):                                   "both write /etc/systemd/system/a.service",
		both(file("/etc/systemd/system/a.service.d"), `{"name":"a.service","dropins":[{"name":"x.conf","contents":""}]}`): "needs to be a directory",
		units(`{"name":"a.service"},{"name":"a.service"}`):                                                                "unit a.service is defined twice",
		units(`{"name":"a.service","dropins":[{"name":"x.conf"},{"name":"x.conf"}]}`):                                     "dropin x.conf is defined twice",
		units(`{"name":"a.service","dropins":[{"name":"x"}]}`):                                                            "only drop-ins whose name ends in .conf",
		units(`{"name":"a"}`):                           "no unit type suffix",
		units(`{"name":"a.bogus"}`):                     "no unit type suffix",
		units(`{"name":".service"}`):                    "empty name before the type",
		units(`{"name":"a b.service"}`):                 "only ASCII letters",
		units(`{"name":"a\u0000.service"}`):             "only ASCII letters",
		units(`{"name":"` + long + `.service"}`):        "longer than 255 bytes",
		files(file("/etc/" + long)):                     "is 256 bytes long, more than Linux's 255",
		files(file(strings.Repeat("/"+long[:200], 21))): "more than Linux's 4095",
		files(file(`/etc/a\u0000b`)):                    "NUL",
		files(file("/etc//a")):                          "not clean (write it /etc/a)",
		files(file("/etc/a/")):                          "not clean",
		files(file("/etc/./a")):                         "not clean",
		files(many...):                                  "the files' contents add up to more than 64 MiB",
	} {
		_, err := mcfgv1.ParseIgnition([]byte(config))
		assert.ErrorContains(t, err, want, config[:min(len(config), 200)])
	}
	for _, ok := range []string{
		units(`{"name":"getty@.service","enabled":true},{"name":"getty@tty1.service"},{"name":"a:b-c_d.e\\x2d.mount"}`),
		files(file("/etc/a"), file("/etc/ab/c"), file("/etc/a.d/b")),
	} {
		_, err := mcfgv1.ParseIgnition([]byte(ok))
		assert.NoError(t, err, ok)
	}
}

// TestGzipBomb: about 1 MiB of gzip that expands to 1.1 GiB is
// refused with an error naming the file as soon as the stream passes
// MaxFileSize, and decoding it never holds much more than the limit: the
// heap grows by far less than the expansion (the decoder is a stream, the
// check stops it early).
func TestGzipBomb(t *testing.T) {
	// gzip streams may be concatenated (RFC 1952, and Go reads them so):
	// 70 copies of 16 MiB of zeros, each about 16 KiB compressed.
	gz := bytes.Repeat(gzipped(t, make([]byte, 16<<20)), 70)
	require.Less(t, len(gz), 2<<20, "the bomb is small")
	config := []byte(`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/etc/bomb","contents":{"compression":"gzip","source":"` +
		mcfgv1.DataURL(gz) + `"}}]}}`)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := mcfgv1.ParseIgnition(config)
	runtime.ReadMemStats(&after)
	assert.ErrorContains(t, err, "file /etc/bomb: content is larger than 16 MiB")
	// TotalAlloc counts every allocation of the parse, freed or not: the
	// config's own copies (a few MiB) and the decompressor's window, not
	// the gigabyte.
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("parsing the bomb allocated %d KiB", allocated>>10)
	assert.Less(t, allocated, uint64(12<<20), "allocated while parsing the bomb")
}
