package bootstrap

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// tokenAlphabet is the character set of bootstrap token IDs and secrets
// ([a-z0-9], see k8s.io/cluster-bootstrap).
const tokenAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

// machineAnnotation records, on a token Secret, which Machine it belongs to,
// so that a token ID collision between two machines is detected instead of
// one machine using the other's token.
const machineAnnotation = "machine.sapcloud.io/machine"

var bootstrapGroup = regexp.MustCompile(bootstrapapi.BootstrapGroupPattern)

// Tokens creates and deletes bootstrap-token Secrets in the target cluster.
type Tokens struct {
	// Client reaches the target cluster. Reads go straight to the API
	// server: pass a client that does not cache Secrets, so that the
	// manager never holds every Secret of kube-system in memory.
	Client client.Client
	// ExtraGroups are added to the token's groups (the flag
	// --bootstrap-token-auth-extra-groups). Each must start with
	// "system:bootstrappers:".
	ExtraGroups []string
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// tokenID returns the bootstrap token ID of a machine. It is derived from
// the Machine's namespace and name, so every reconcile finds the Secret an
// earlier one created (no state is kept in memory or on the Machine).
func tokenID(machine types.NamespacedName) string {
	sum := sha256.Sum256([]byte(machine.String()))
	n := new(big.Int).SetBytes(sum[:])
	base := big.NewInt(int64(len(tokenAlphabet)))
	id := make([]byte, 6)
	for i := range id {
		var r big.Int
		n.DivMod(n, base, &r)
		id[i] = tokenAlphabet[r.Int64()]
	}
	return string(id)
}

// SecretName is the name of the bootstrap-token Secret of a machine.
func SecretName(machine types.NamespacedName) string {
	return bootstrapapi.BootstrapTokenSecretPrefix + tokenID(machine)
}

// Ensure returns the bootstrap token ("<id>.<secret>") of a machine,
// creating its Secret in kube-system when it does not exist or has expired.
// A new token expires after ttl (the machine's creation timeout).
//
// It creates first and reads only when the Secret exists already: a
// machine is created once, so the usual case costs one request, not two.
func (t *Tokens) Ensure(ctx context.Context, machine types.NamespacedName, ttl time.Duration) (string, error) {
	key := client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: SecretName(machine)}
	for attempt := 0; attempt < 3; attempt++ {
		secret, token, err := t.newSecret(machine, ttl)
		if err != nil {
			return "", err
		}
		err = t.Client.Create(ctx, secret)
		if err == nil {
			return token, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("creating bootstrap token secret %s: %w", key, err)
		}
		existing := &corev1.Secret{}
		if err := t.Client.Get(ctx, key, existing); err != nil {
			if apierrors.IsNotFound(err) {
				continue // deleted meanwhile: create again
			}
			return "", fmt.Errorf("reading bootstrap token secret %s: %w", key, err)
		}
		if owner := existing.Annotations[machineAnnotation]; owner != machine.String() {
			return "", fmt.Errorf("bootstrap token secret %s belongs to machine %q, not %q", key, owner, machine)
		}
		if !t.expired(existing) {
			return string(existing.Data[bootstrapapi.BootstrapTokenIDKey]) + "." + string(existing.Data[bootstrapapi.BootstrapTokenSecretKey]), nil
		}
		// An expired token cannot bootstrap anything: replace it.
		if err := t.Client.Delete(ctx, existing, client.Preconditions{UID: &existing.UID}); err != nil && !apierrors.IsNotFound(err) {
			return "", fmt.Errorf("deleting expired bootstrap token secret %s: %w", key, err)
		}
	}
	return "", fmt.Errorf("bootstrap token secret %s keeps changing, try again", key)
}

// Delete removes the bootstrap-token Secret of a machine, if any. It is
// called once the machine has joined and when the machine is deleted.
func (t *Tokens) Delete(ctx context.Context, machine types.NamespacedName) error {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: SecretName(machine)}}
	if err := t.Client.Delete(ctx, secret); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting bootstrap token secret %s/%s: %w", secret.Namespace, secret.Name, err)
	}
	return nil
}

func (t *Tokens) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}

func (t *Tokens) expired(s *corev1.Secret) bool {
	exp, err := time.Parse(time.RFC3339, string(s.Data[bootstrapapi.BootstrapTokenExpirationKey]))
	if err != nil {
		return true
	}
	return !t.now().Before(exp)
}

func (t *Tokens) newSecret(machine types.NamespacedName, ttl time.Duration) (*corev1.Secret, string, error) {
	for _, g := range t.ExtraGroups {
		if !bootstrapGroup.MatchString(g) {
			return nil, "", fmt.Errorf("bootstrap token extra group %q does not match %s", g, bootstrapapi.BootstrapGroupPattern)
		}
	}
	secretPart, err := randomString(16)
	if err != nil {
		return nil, "", err
	}
	id := tokenID(machine)
	data := map[string][]byte{
		bootstrapapi.BootstrapTokenIDKey:               []byte(id),
		bootstrapapi.BootstrapTokenSecretKey:           []byte(secretPart),
		bootstrapapi.BootstrapTokenExpirationKey:       []byte(t.now().Add(ttl).UTC().Format(time.RFC3339)),
		bootstrapapi.BootstrapTokenUsageAuthentication: []byte("true"),
		bootstrapapi.BootstrapTokenUsageSigningKey:     []byte("true"),
		bootstrapapi.BootstrapTokenDescriptionKey:      []byte("machina bootstrap token for machine " + machine.String()),
	}
	if len(t.ExtraGroups) > 0 {
		data[bootstrapapi.BootstrapTokenExtraGroupsKey] = []byte(strings.Join(t.ExtraGroups, ","))
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   metav1.NamespaceSystem,
			Name:        bootstrapapi.BootstrapTokenSecretPrefix + id,
			Annotations: map[string]string{machineAnnotation: machine.String()},
		},
		Type: bootstrapapi.SecretTypeBootstrapToken,
		Data: data,
	}
	return secret, id + "." + secretPart, nil
}

func randomString(n int) (string, error) {
	out := make([]byte, n)
	max := big.NewInt(int64(len(tokenAlphabet)))
	for i := range out {
		r, err := rand.Int(rand.Reader, max)
		if err != nil {
			return "", errors.New("reading random bytes for a bootstrap token failed")
		}
		out[i] = tokenAlphabet[r.Int64()]
	}
	return string(out), nil
}
