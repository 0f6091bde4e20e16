package secret

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// secretRefIndex is the name of the cache index on MachineClasses whose
// values are the "namespace/name" keys of the secrets the class refers to.
const secretRefIndex = "secret.machina.io/secret-refs"

// SecretsOfClass returns the secrets a class refers to, secretRef first,
// without duplicates. A reference without a namespace means the class's
// own namespace.
func SecretsOfClass(class *v1alpha1.MachineClass) []types.NamespacedName {
	var out []types.NamespacedName
	for _, ref := range []*corev1.SecretReference{class.SecretRef, class.CredentialsSecretRef} {
		if ref == nil || ref.Name == "" {
			continue
		}
		key := types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}
		if key.Namespace == "" {
			key.Namespace = class.Namespace
		}
		if len(out) == 1 && out[0] == key {
			continue
		}
		out = append(out, key)
	}
	return out
}

// indexSecretRefs is the index function of secretRefIndex.
func indexSecretRefs(obj client.Object) []string {
	class, ok := obj.(*v1alpha1.MachineClass)
	if !ok {
		return nil
	}
	var keys []string
	for _, key := range SecretsOfClass(class) {
		keys = append(keys, key.String())
	}
	return keys
}

// classesReferring returns the names of the MachineClasses, from the cache,
// that refer to the secret, sorted.
func classesReferring(ctx context.Context, c client.Reader, secret types.NamespacedName) ([]string, error) {
	classes := &v1alpha1.MachineClassList{}
	if err := c.List(ctx, classes, client.MatchingFields{secretRefIndex: secret.String()}); err != nil {
		return nil, fmt.Errorf("listing machine classes referring to secret %s: %w", secret, err)
	}
	names := make([]string, 0, len(classes.Items))
	for i := range classes.Items {
		names = append(names, classes.Items[i].Namespace+"/"+classes.Items[i].Name)
	}
	sort.Strings(names)
	return names, nil
}

// maxNamedClasses bounds how many classes an event names.
const maxNamedClasses = 5

// describeClasses renders class names for an event.
func describeClasses(names []string) string {
	shown := names
	if len(shown) > maxNamedClasses {
		shown = shown[:maxNamedClasses]
	}
	s := "MachineClass " + strings.Join(shown, ", MachineClass ")
	if rest := len(names) - len(shown); rest > 0 {
		s += fmt.Sprintf(" and %d more", rest)
	}
	return s
}
