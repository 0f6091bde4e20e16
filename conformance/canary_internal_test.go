package conformance

import (
	"encoding/base64"
	"testing"
)

// TestFindCanaryB64 checks that the canary is found in base64 at any offset
// of a larger value, and not where it is absent.
func TestFindCanaryB64(t *testing.T) {
	s := &suite{canary: "machina-canary-abcdefghij0123456789"}
	for k := 0; k < 7; k++ {
		msg := append([]byte("prefix-"[:k]), []byte(s.canary+`","x":1}`)...)
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawURLEncoding} {
			if s.findCanary([]byte(enc.EncodeToString(msg))) == "" {
				t.Errorf("k=%d missed", k)
			}
		}
	}
	if s.findCanary([]byte("nothing here")) != "" {
		t.Error("false positive")
	}
}
