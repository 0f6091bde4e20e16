package mcrender

import (
	"crypto/md5" //nolint:gosec // a name, not a secret: md5 as MCO names rendered configs
	"encoding/hex"
	"fmt"

	"sigs.k8s.io/yaml"

	mcfgv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
)

// salt is prepended to what is hashed, as MCO does (80 random bytes, its
// own; machina's names therefore never collide with MCO's). Changing it
// renames every rendered configuration and rolls every pool: never change
// it.
var salt = []byte{
	219, 124, 251, 23, 111, 3, 53, 168, 19, 64, 250, 108, 246, 30, 105, 50, 14, 163, 103, 166,
	67, 207, 63, 172, 143, 192, 44, 63, 170, 221, 168, 193, 163, 139, 159, 72, 251, 140, 215, 172,
	12, 247, 197, 140, 94, 62, 49, 100, 105, 240, 98, 240, 177, 126, 115, 84, 207, 100, 180, 245,
	10, 225, 170, 66, 44, 52, 215, 85, 148, 210, 129, 227, 85, 1, 48, 78, 167, 48, 107, 165,
}

// renderedName is rendered-<pool>-<md5 of the salt and the YAML of spec>.
// The YAML has its map keys sorted and the config's JSON is already
// canonical (merge), so the name depends only on the content.
func renderedName(pool string, spec *mcfgv1.MachineConfigSpec) (string, error) {
	data, err := yaml.Marshal(spec)
	if err != nil {
		return "", fmt.Errorf("hashing the rendered config: %w", err)
	}
	h := md5.New() //nolint:gosec // see the import
	h.Write(salt)
	h.Write(data)
	return mcfgv1.RenderedPrefix + pool + "-" + hex.EncodeToString(h.Sum(nil)), nil
}
