package chaos

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// newCanary returns a secret value that appears nowhere else: a fixed
// prefix (so that a hit is easy to read) and 16 random bytes.
func newCanary() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "chaos-canary-" + hex.EncodeToString(b)
}

// canaryForms are the byte strings that betray the canary: the value
// itself (also inside JSON, whose escaping leaves it unchanged), in upper
// case, in hex, and in base64 (standard and URL alphabets, padded or not)
// at each of the three alignments it can have inside a longer encoded
// value, such as the user data it is part of. For an alignment, only the
// characters that depend on the canary alone are kept.
func canaryForms(canary string) [][]byte {
	forms := [][]byte{[]byte(canary), []byte(strings.ToUpper(canary)), []byte(hex.EncodeToString([]byte(canary)))}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		for shift := range 3 {
			// shift filler bytes before the canary; drop the output
			// characters that mix filler bits, and the last characters,
			// which mix in what follows.
			in := append(bytes.Repeat([]byte{0}, shift), canary...)
			out := enc.EncodeToString(in)
			start := (shift*8 + 5) / 6
			end := (len(in) * 8) / 6
			forms = append(forms, []byte(out[start:end]))
		}
	}
	return forms
}

// canaryHit is one place the canary was found.
type canaryHit struct{ where, form string }

// searchBytes returns the forms of the canary found in data.
func searchBytes(data []byte, forms [][]byte) []string {
	var found []string
	for _, f := range forms {
		if bytes.Contains(data, f) {
			found = append(found, string(f))
		}
	}
	return found
}

// searchCanary searches the log files and every Event, Machine, MachineSet,
// MachineDeployment, MachineClass and Node (metadata, spec and status, as
// the API server returns them) for the canary. Secrets are its only
// rightful place and are not searched.
func searchCanary(ctx context.Context, c client.Client, logs []string, forms [][]byte) ([]canaryHit, error) {
	var hits []canaryHit
	for _, path := range logs {
		data, err := os.ReadFile(path)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, f := range searchBytes(data, forms) {
			hits = append(hits, canaryHit{where: "log " + path, form: f})
		}
	}
	lists := []client.ObjectList{
		&corev1.EventList{}, &eventsv1.EventList{},
		&v1alpha1.MachineList{}, &v1alpha1.MachineSetList{}, &v1alpha1.MachineDeploymentList{}, &v1alpha1.MachineClassList{},
		&corev1.NodeList{},
	}
	for _, list := range lists {
		if err := c.List(ctx, list); err != nil {
			return nil, fmt.Errorf("listing %T: %w", list, err)
		}
		data, err := json.Marshal(list)
		if err != nil {
			return nil, err
		}
		for _, f := range searchBytes(data, forms) {
			hits = append(hits, canaryHit{where: fmt.Sprintf("%T", list), form: f})
		}
	}
	return hits, nil
}
