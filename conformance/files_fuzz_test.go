package conformance_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/machina-io/machina/conformance"
)

// fileCanary replaces the fuzzer's '@' in a file: a secret value that must
// never be quoted in an error.
const fileCanary = "CANARY-FILE-SECRET-3d8e"

// writeFuzzFile writes data to a file of its own for one fuzz input.
func writeFuzzFile(t *testing.T, data []byte) string {
	path := filepath.Join(t.TempDir(), "f.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// FuzzLoadFiles feeds any file content to every loader of the conformance
// binary's configuration files (machine class, provider spec, secrets, node
// template, volume fixtures): no panic, and an accepted machine class or
// provider spec holds a JSON object.
func FuzzLoadFiles(f *testing.F) {
	for _, name := range []string{"machineclass.yaml", "secrets.yaml", "nodetemplate.yaml", "volumes.yaml"} {
		if data, err := os.ReadFile(filepath.Join("testdata", name)); err == nil {
			f.Add(data)
		}
	}
	for _, s := range []string{"name: x\nproviderSpec: {a: 1}\n", "providerSpec: [1]\n", "kind: Secret\ndata: {k: '@'}\n",
		"- name: pv\n  spec: {csi: {driver: d}}\n  volumeID: v\n", "labels: {a: b}\ntaints: [{key: k, effect: NoSchedule}]\n",
		"a: &x [*x]\n", "{", "\f{}", "providerSpec: \"\\f{}\"\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := writeFuzzFile(t, bytes.ReplaceAll(data, []byte("@"), []byte(fileCanary)))
		if c, err := conformance.LoadMachineClass(path); err == nil {
			var obj map[string]json.RawMessage
			if json.Unmarshal(c.ProviderSpec, &obj) != nil || obj == nil {
				t.Fatalf("accepted a class whose provider spec is no JSON object: %q", c.ProviderSpec)
			}
		}
		if spec, err := conformance.LoadProviderSpec(path); err == nil {
			var obj map[string]json.RawMessage
			if json.Unmarshal(spec, &obj) != nil || obj == nil {
				t.Fatalf("accepted a provider spec that is no JSON object: %q", spec)
			}
		}
		_, _ = conformance.LoadSecrets(path)
		_, _ = conformance.LoadNodeTemplate(path)
		_, _ = conformance.LoadVolumeFixtures(path)
	})
}

// FuzzLoadSecretsNeverQuotesValues writes a secrets file, plain or as a
// Secret manifest, whose value is the canary followed by anything, and checks
// that no error quotes it, raw or base64-encoded: the conformance binary
// prints these errors.
func FuzzLoadSecretsNeverQuotesValues(f *testing.F) {
	f.Add(uint8(0), "password", "")
	f.Add(uint8(1), "password", "!not base64")
	f.Add(uint8(2), "k", "\n- x")
	f.Add(uint8(3), "k", "': [")
	f.Fuzz(func(t *testing.T, form uint8, key, suffix string) {
		if strings.Contains(key, fileCanary) {
			return
		}
		value := fileCanary + suffix
		var doc string
		switch form % 4 {
		case 0: // a plain map, JSON (which is YAML)
			b, _ := json.Marshal(map[string]string{key: value})
			doc = string(b)
		case 1: // a Secret manifest with a value that may not be base64
			b, _ := json.Marshal(map[string]any{"kind": "Secret", "data": map[string]string{key: value}})
			doc = string(b)
		case 2: // stringData
			b, _ := json.Marshal(map[string]any{"kind": "Secret", "stringData": map[string]string{key: value}})
			doc = string(b)
		default: // the value pasted into YAML unquoted, as a careless file would have it
			doc = key + ": " + value + "\n"
		}
		_, err := conformance.LoadSecrets(writeFuzzFile(t, []byte(doc)))
		if err == nil {
			return
		}
		if msg := err.Error(); strings.Contains(msg, fileCanary) || strings.Contains(msg, base64.StdEncoding.EncodeToString([]byte(fileCanary))[:24]) {
			t.Fatalf("the error quotes a secret value: %v", msg)
		}
	})
}
