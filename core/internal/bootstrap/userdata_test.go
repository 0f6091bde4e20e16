package bootstrap

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/types"
)

func TestRender(t *testing.T) {
	in := []byte("name=<<MACHINE_NAME>> token=<<BOOTSTRAP_TOKEN>> url=https://x/?n=%3C%3CMACHINE_NAME%3E%3E&t=%3C%3CBOOTSTRAP_TOKEN%3E%3E")
	orig := string(in)
	out := Render(in, "worker-1", "abcdef.0123456789abcdef")
	assert.Equal(t, "name=worker-1 token=abcdef.0123456789abcdef url=https://x/?n=worker-1&t=abcdef.0123456789abcdef", string(out))
	assert.Equal(t, orig, string(in), "Render must not modify its input")
}

func TestNeedsToken(t *testing.T) {
	assert.True(t, NeedsToken([]byte("x <<BOOTSTRAP_TOKEN>> y")))
	assert.True(t, NeedsToken([]byte("x%3C%3CBOOTSTRAP_TOKEN%3E%3Ey")))
	assert.False(t, NeedsToken([]byte("x <<MACHINE_NAME>> y")))
	assert.False(t, NeedsToken(nil))
}

func TestTokenID(t *testing.T) {
	a := tokenID(types.NamespacedName{Namespace: "ns", Name: "m1"})
	assert.Regexp(t, `^[a-z0-9]{6}$`, a)
	assert.Equal(t, a, tokenID(types.NamespacedName{Namespace: "ns", Name: "m1"}), "stable across calls")
	assert.NotEqual(t, a, tokenID(types.NamespacedName{Namespace: "ns", Name: "m2"}))
	assert.NotEqual(t, a, tokenID(types.NamespacedName{Namespace: "other", Name: "m1"}))
	assert.Equal(t, "bootstrap-token-"+a, SecretName(types.NamespacedName{Namespace: "ns", Name: "m1"}))
}
