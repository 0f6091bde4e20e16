package chaos

import (
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"
)

// The canary must be found however it is embedded: inside user data that is
// base64-encoded as a whole (at every offset, so at every alignment), in
// hex, or plainly; and not in text that only shares its prefix.
func TestCanaryFormsFindEmbeddedCanary(t *testing.T) {
	canary := newCanary()
	forms := canaryForms(canary)
	for prefix := range 6 {
		data := []byte(strings.Repeat("x", prefix) + "token: " + canary + "\nmore")
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding} {
			encoded := []byte(`{"userData":"` + enc.EncodeToString(data) + `"}`)
			if len(searchBytes(encoded, forms)) == 0 {
				t.Errorf("canary not found in base64 of user data with a %d-byte prefix: %s", prefix, encoded)
			}
		}
	}
	if len(searchBytes([]byte("id="+hex.EncodeToString([]byte(canary))), forms)) == 0 {
		t.Error("canary not found in hex")
	}
	if len(searchBytes([]byte(`msg="secret `+canary+`"`), forms)) == 0 {
		t.Error("canary not found as plain text")
	}
	other := newCanary()
	if hits := searchBytes([]byte(other+base64.StdEncoding.EncodeToString([]byte(other))), forms); len(hits) > 0 {
		t.Errorf("another canary matched as %q", hits)
	}
}
