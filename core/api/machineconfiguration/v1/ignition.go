package v1

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"path"
	"slices"
	"strings"
)

// Ignition is the subset of an Ignition config (spec 3.x) machina acts on:
// files and systemd units. Everything else in spec.config is kept as written
// but not applied.
//
// +kubebuilder:object:generate=false
type Ignition struct {
	Ignition IgnitionMeta    `json:"ignition"`
	Storage  IgnitionStorage `json:"storage,omitempty"`
	Systemd  IgnitionSystemd `json:"systemd,omitempty"`
}

// IgnitionMeta is the ignition section: the spec version.
//
// +kubebuilder:object:generate=false
type IgnitionMeta struct {
	Version string `json:"version,omitempty"`
}

// IgnitionStorage is the storage section; machina applies its files.
//
// +kubebuilder:object:generate=false
type IgnitionStorage struct {
	Files []IgnitionFile `json:"files,omitempty"`
}

// IgnitionFile is a file to write.
//
// +kubebuilder:object:generate=false
type IgnitionFile struct {
	// Path is absolute.
	Path string `json:"path"`
	// Mode is the file's permission bits (decimal in JSON, as in Ignition:
	// 420 is 0644). Unset means 0644.
	Mode *int `json:"mode,omitempty"`
	// Overwrite replaces an existing file; rendered configurations set it
	// to true where it is unset.
	Overwrite *bool                `json:"overwrite,omitempty"`
	Contents  IgnitionFileContents `json:"contents,omitempty"`
}

// IgnitionFileContents is where a file's data comes from.
//
// +kubebuilder:object:generate=false
type IgnitionFileContents struct {
	// Source is a URL; machina reads data: URLs (RFC 2397).
	Source *string `json:"source,omitempty"`
	// Compression is "" or "gzip".
	Compression *string `json:"compression,omitempty"`
}

// IgnitionSystemd is the systemd section.
//
// +kubebuilder:object:generate=false
type IgnitionSystemd struct {
	Units []IgnitionUnit `json:"units,omitempty"`
}

// IgnitionUnit is a systemd unit and its drop-ins.
//
// +kubebuilder:object:generate=false
type IgnitionUnit struct {
	Name     string           `json:"name"`
	Enabled  *bool            `json:"enabled,omitempty"`
	Mask     *bool            `json:"mask,omitempty"`
	Contents *string          `json:"contents,omitempty"`
	Dropins  []IgnitionDropin `json:"dropins,omitempty"`
}

// IgnitionDropin is a drop-in of a unit
// (/etc/systemd/system/<unit>.d/<name>).
//
// +kubebuilder:object:generate=false
type IgnitionDropin struct {
	Name     string  `json:"name"`
	Contents *string `json:"contents,omitempty"`
}

// DefaultFileMode is the mode of a file whose mode is unset.
const DefaultFileMode = 0o644

// MaxFileSize bounds a file's content after decoding and decompression. A
// MachineConfig is at most what etcd stores (about 1.5 MiB), but a gzip
// source of that size can expand a thousandfold: the bound keeps one
// fragment from exhausting the manager's or an agent's memory.
const MaxFileSize = 16 << 20

// ParseIgnition reads raw (a MachineConfig's spec.config) and checks the
// subset machina acts on: a 3.x version, absolute file paths, modes within
// 07777, readable data: URLs, unit names. An empty raw is an empty config.
func ParseIgnition(raw []byte) (*Ignition, error) {
	ign := &Ignition{}
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return ign, nil
	}
	if err := json.Unmarshal(raw, ign); err != nil {
		return nil, fmt.Errorf("config is not an Ignition config: %w", err)
	}
	if err := ign.Validate(); err != nil {
		return nil, err
	}
	return ign, nil
}

// Validate checks what ParseIgnition documents.
func (ign *Ignition) Validate() error {
	if err := CheckIgnitionVersion(ign.Ignition.Version); err != nil {
		return err
	}
	for _, f := range ign.Storage.Files {
		if !path.IsAbs(f.Path) {
			return fmt.Errorf("file %q: path is not absolute", f.Path)
		}
		// Refused here rather than only by the node agent, so that the pool
		// says RenderDegraded instead of degrading every node in turn.
		if slices.Contains(strings.Split(f.Path, "/"), "..") || path.Clean(f.Path) == "/" {
			return fmt.Errorf("file %q: path leaves the node's file system or names its root", f.Path)
		}
		if f.Mode != nil && (*f.Mode < 0 || *f.Mode > 0o7777) {
			return fmt.Errorf("file %s: invalid mode %d (want 0 to 4095, that is 0 to 07777)", f.Path, *f.Mode)
		}
		if f.Contents.Compression != nil && *f.Contents.Compression != "" && *f.Contents.Compression != "gzip" {
			return fmt.Errorf("file %s: unsupported compression %q", f.Path, *f.Contents.Compression)
		}
		if _, err := f.Data(); err != nil {
			return err
		}
	}
	for _, u := range ign.Systemd.Units {
		if !fileName(u.Name) {
			return fmt.Errorf("unit %q: invalid name", u.Name)
		}
		for _, d := range u.Dropins {
			if !fileName(d.Name) {
				return fmt.Errorf("unit %s: dropin %q: invalid name", u.Name, d.Name)
			}
		}
	}
	return nil
}

// fileName tells whether name is one path element, as a unit or drop-in
// name must be.
func fileName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\\\x00")
}

// CheckIgnitionVersion accepts the Ignition spec versions 3.0.0 to 3.5.0.
// An empty version is refused: a config without one is not Ignition.
func CheckIgnitionVersion(v string) error {
	switch v {
	case "3.0.0", "3.1.0", "3.2.0", "3.3.0", "3.4.0", "3.5.0":
		return nil
	case "":
		return fmt.Errorf("config has no ignition.version")
	}
	return fmt.Errorf("unsupported Ignition version %q (supported: 3.0.0 to 3.5.0)", v)
}

// FileMode is the file's mode, DefaultFileMode when unset.
func (f IgnitionFile) FileMode() int {
	if f.Mode == nil {
		return DefaultFileMode
	}
	return *f.Mode
}

// Data is the file's content: the data: URL of contents.source decoded
// (and gunzipped with compression gzip). A file without a source is empty.
func (f IgnitionFile) Data() ([]byte, error) {
	if f.Contents.Source == nil || *f.Contents.Source == "" {
		return nil, nil
	}
	data, err := DecodeDataURL(*f.Contents.Source)
	if err != nil {
		return nil, fmt.Errorf("file %s: %w", f.Path, err)
	}
	if f.Contents.Compression != nil && *f.Contents.Compression == "gzip" {
		r, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("file %s: gzip: %w", f.Path, err)
		}
		defer r.Close()
		if data, err = io.ReadAll(io.LimitReader(r, MaxFileSize+1)); err != nil {
			return nil, fmt.Errorf("file %s: gzip: %w", f.Path, err)
		}
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("file %s: content is larger than %d MiB", f.Path, MaxFileSize>>20)
	}
	return data, nil
}

// DecodeDataURL decodes an RFC 2397 data: URL ("data:[<mediatype>][;base64],<data>").
// Other URL schemes are refused: machina reads no remote contents.
func DecodeDataURL(s string) ([]byte, error) {
	rest, ok := strings.CutPrefix(s, "data:")
	if !ok {
		scheme, _, _ := strings.Cut(s, ":")
		return nil, fmt.Errorf("contents.source: unsupported URL scheme %q (only data: URLs are supported)", scheme)
	}
	meta, payload, ok := strings.Cut(rest, ",")
	if !ok {
		return nil, fmt.Errorf("contents.source: data URL without a comma")
	}
	if strings.HasSuffix(meta, ";base64") {
		data, err := base64.StdEncoding.DecodeString(payload)
		if err != nil {
			// Some writers drop the padding.
			if data, err = base64.RawStdEncoding.DecodeString(payload); err != nil {
				return nil, fmt.Errorf("contents.source: bad base64 data: %w", err)
			}
		}
		return data, nil
	}
	data, err := url.PathUnescape(payload)
	if err != nil {
		return nil, fmt.Errorf("contents.source: bad percent-encoding: %w", err)
	}
	return []byte(data), nil
}

// DataURL encodes data as a data: URL, base64 when that is shorter than
// percent-encoding.
func DataURL(data []byte) string {
	escaped := url.PathEscape(string(data))
	b64 := base64.StdEncoding.EncodeToString(data)
	if len(b64)+len(";base64") < len(escaped) {
		return "data:;base64," + b64
	}
	return "data:," + escaped
}
