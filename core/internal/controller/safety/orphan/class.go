package orphan

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// userDataKey is the key of a class Secret that holds user data; it is not
// a credential and is not sent with ListMachines or DeleteMachine.
const userDataKey = "userData"

// classMessage is the Driver API's view of a MachineClass (§4.9), as the
// Machine controller sends it: the provider spec exactly as stored.
func classMessage(c *v1alpha1.MachineClass) *driverv1alpha1.MachineClass {
	msg := &driverv1alpha1.MachineClass{
		Name:         c.Name,
		Namespace:    c.Namespace,
		ProviderSpec: c.ProviderSpec.Raw,
		Provider:     c.Provider,
	}
	if nt := c.NodeTemplate; nt != nil {
		tmpl := &driverv1alpha1.ClassNodeTemplate{
			Capacity:        quantities(nt.Capacity),
			VirtualCapacity: quantities(nt.VirtualCapacity),
			InstanceType:    nt.InstanceType,
			Region:          nt.Region,
			Zone:            nt.Zone,
		}
		if nt.Architecture != nil {
			tmpl.Architecture = *nt.Architecture
		}
		msg.NodeTemplate = tmpl
	}
	return msg
}

func quantities(rl corev1.ResourceList) map[string]string {
	if len(rl) == 0 {
		return nil
	}
	out := make(map[string]string, len(rl))
	for name, q := range rl {
		out[string(name)] = q.String()
	}
	return out
}

// missingSecretError is a class whose Secret does not exist: a problem of
// that class only, not of the API server.
type missingSecretError struct{ ref string }

func (e *missingSecretError) Error() string { return "Secret " + e.ref + " not found" }

// classSecrets reads the data of the class's secretRef and
// credentialsSecretRef from the API server, merged with credentialsSecretRef
// winning (Driver API §4.5), without the user data.
func classSecrets(ctx context.Context, r client.Reader, c *v1alpha1.MachineClass) (map[string][]byte, error) {
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
				return nil, &missingSecretError{ref: ns + "/" + ref.Name}
			}
			return nil, fmt.Errorf("reading Secret %s/%s: %w", ns, ref.Name, err)
		}
		maps.Copy(data, secret.Data)
	}
	delete(data, userDataKey)
	return data, nil
}
