package driverclass

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// userDataKey is the key of a class Secret that holds the user data: it is
// sent as user_data (CreateMachine only), never among the secrets.
const userDataKey = "userData"

// MissingSecretError is a Secret the class refers to that does not exist:
// a problem of that class for its owner to fix, not of the API server.
type MissingSecretError struct {
	// Ref is "namespace/name" of the Secret.
	Ref string
}

func (e *MissingSecretError) Error() string { return "Secret " + e.Ref + " not found" }

// Secrets reads the class's secretRef and credentialsSecretRef through r and
// merges their data, credentialsSecretRef winning on a key in both (§4.5),
// with the user data taken out and returned apart. A Secret without a
// namespace is in the class's.
func Secrets(ctx context.Context, r client.Reader, c *v1alpha1.MachineClass) (secrets map[string][]byte, userData []byte, err error) {
	data := map[string][]byte{}
	for _, ref := range []*corev1.SecretReference{c.SecretRef, c.CredentialsSecretRef} {
		if ref == nil || ref.Name == "" {
			continue
		}
		ns := ref.Namespace
		if ns == "" {
			ns = c.Namespace
		}
		secret := &corev1.Secret{}
		if err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, secret); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, nil, &MissingSecretError{Ref: ns + "/" + ref.Name}
			}
			return nil, nil, fmt.Errorf("reading Secret %s/%s: %w", ns, ref.Name, err)
		}
		// Later references win: credentialsSecretRef comes second.
		maps.Copy(data, secret.Data)
	}
	userData = data[userDataKey]
	delete(data, userDataKey)
	return data, userData, nil
}
