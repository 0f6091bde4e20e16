package driverclass

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// Contents is what of a MachineClass a VM is made from: everything the
// Driver API's MachineClass message carries besides the class's name, and
// the references to its Secrets (never their data). Its hash is recorded on
// each Machine (v1alpha1.ClassHashAnnotation) and its JSON is kept in a
// snapshot, so that the core can tell a driver what a VM was created with.
type Contents struct {
	Provider             string                  `json:"provider,omitempty"`
	ProviderSpec         runtime.RawExtension    `json:"providerSpec"`
	NodeTemplate         *v1alpha1.NodeTemplate  `json:"nodeTemplate,omitempty"`
	SecretRef            *corev1.SecretReference `json:"secretRef,omitempty"`
	CredentialsSecretRef *corev1.SecretReference `json:"credentialsSecretRef,omitempty"`
}

// ContentsOf returns the contents of c.
func ContentsOf(c *v1alpha1.MachineClass) Contents {
	return Contents{
		Provider:             c.Provider,
		ProviderSpec:         c.ProviderSpec,
		NodeTemplate:         c.NodeTemplate,
		SecretRef:            c.SecretRef,
		CredentialsSecretRef: c.CredentialsSecretRef,
	}
}

// Class returns a MachineClass named like c with these contents, for the
// Driver API message of a class as it was.
func (k Contents) Class(name, namespace string) *v1alpha1.MachineClass {
	c := &v1alpha1.MachineClass{
		Provider:             k.Provider,
		ProviderSpec:         k.ProviderSpec,
		NodeTemplate:         k.NodeTemplate,
		SecretRef:            k.SecretRef,
		CredentialsSecretRef: k.CredentialsSecretRef,
	}
	c.Name, c.Namespace = name, namespace
	return c
}

// Hash returns the hex SHA-256 of the contents' canonical JSON: object keys
// sorted at every level, so that two encodings of the same provider spec
// hash alike.
func (k Contents) Hash() (string, error) {
	raw, err := json.Marshal(k)
	if err != nil {
		return "", fmt.Errorf("encoding the class contents: %w", err)
	}
	// Decoding into any and encoding again sorts the keys of the provider
	// spec too; UseNumber keeps numbers as written.
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return "", fmt.Errorf("decoding the class contents: %w", err)
	}
	canonical, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("encoding the class contents: %w", err)
	}
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:]), nil
}

// Hash returns the hash of c's contents.
func Hash(c *v1alpha1.MachineClass) (string, error) {
	return ContentsOf(c).Hash()
}
