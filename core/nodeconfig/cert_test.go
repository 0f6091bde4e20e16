package nodeconfig

import (
	"crypto/x509"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSelfSignedIsTrustedForItsNames checks that an agent which trusts the
// published certificate accepts it for the names it was made for, and
// only those, and that a replica's entry counts as expired once every
// certificate in it has (it is then dropped from the ConfigMap).
func TestSelfSignedIsTrustedForItsNames(t *testing.T) {
	now := time.Now()
	cert, certPEM, err := selfSigned([]string{"machina-node-config.machina-system.svc", "127.0.0.1"}, now)
	require.NoError(t, err)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(certPEM))
	for _, name := range []string{"machina-node-config.machina-system.svc", "127.0.0.1"} {
		_, err := cert.Leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: roots, CurrentTime: now})
		assert.NoError(t, err, name)
	}
	_, err = cert.Leaf.Verify(x509.VerifyOptions{DNSName: "elsewhere.example", Roots: roots, CurrentTime: now})
	assert.Error(t, err, "another name")
	_, err = cert.Leaf.Verify(x509.VerifyOptions{Roots: x509.NewCertPool(), CurrentTime: now})
	assert.Error(t, err, "not trusted without the published certificate")

	_, oldPEM, err := selfSigned([]string{"127.0.0.1"}, now.Add(-certLifetime-time.Hour))
	require.NoError(t, err)
	assert.False(t, expired(certPEM, now), "a valid certificate")
	assert.True(t, expired(oldPEM, now), "an expired certificate")
	assert.False(t, expired(append(append([]byte{}, oldPEM...), certPEM...), now), "old and new side by side")
	assert.True(t, expired([]byte("not a certificate"), now), "no certificate")
	assert.Less(t, renewEvery, certLifetime/2, "a certificate is renewed well before it expires")
}
