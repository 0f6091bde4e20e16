package v1

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/url"
	"path"
	"slices"
	"strings"
)

// Ignition is an Ignition config (spec 3.0 to 3.5) as machina reads it:
// every field of the specification is declared, so that ParseIgnition
// refuses a key the specification does not have instead of dropping it.
// Fields machina never applies on a running node (disks, file systems,
// directories, links, groups, users other than core, ...) are kept as raw
// JSON: they are refused by Validate, whatever they hold.
//
// +kubebuilder:object:generate=false
type Ignition struct {
	Ignition IgnitionMeta `json:"ignition"`
	// KernelArguments is Ignition's own kernelArguments section
	// (shouldExist, shouldNotExist). Refused, as MCO refuses it: a
	// MachineConfig's spec.kernelArguments is the way.
	KernelArguments json.RawMessage `json:"kernelArguments,omitempty"`
	Passwd          IgnitionPasswd  `json:"passwd,omitempty"`
	Storage         IgnitionStorage `json:"storage,omitempty"`
	Systemd         IgnitionSystemd `json:"systemd,omitempty"`
}

// IgnitionMeta is the ignition section: the spec version, and what Ignition
// reads at first boot only (other configs to merge, timeouts, TLS, proxy),
// which has no meaning for a running node and is refused.
//
// +kubebuilder:object:generate=false
type IgnitionMeta struct {
	Version  string          `json:"version,omitempty"`
	Config   json.RawMessage `json:"config,omitempty"`
	Timeouts json.RawMessage `json:"timeouts,omitempty"`
	Security json.RawMessage `json:"security,omitempty"`
	Proxy    json.RawMessage `json:"proxy,omitempty"`
}

// IgnitionPasswd is the passwd section. Only the user core can be
// configured, and of it only its SSH keys, as on an OpenShift node.
//
// +kubebuilder:object:generate=false
type IgnitionPasswd struct {
	Users  []IgnitionUser  `json:"users,omitempty"`
	Groups json.RawMessage `json:"groups,omitempty"`
}

// IgnitionUser is a user of the passwd section.
//
// +kubebuilder:object:generate=false
type IgnitionUser struct {
	Name              string   `json:"name"`
	SSHAuthorizedKeys []string `json:"sshAuthorizedKeys,omitempty"`
	// The other fields of Ignition's user; refused when set.
	PasswordHash *string         `json:"passwordHash,omitempty"`
	UID          *int            `json:"uid,omitempty"`
	Gecos        *string         `json:"gecos,omitempty"`
	HomeDir      *string         `json:"homeDir,omitempty"`
	NoCreateHome *bool           `json:"noCreateHome,omitempty"`
	PrimaryGroup *string         `json:"primaryGroup,omitempty"`
	Groups       json.RawMessage `json:"groups,omitempty"`
	NoUserGroup  *bool           `json:"noUserGroup,omitempty"`
	NoLogInit    *bool           `json:"noLogInit,omitempty"`
	Shell        *string         `json:"shell,omitempty"`
	ShouldExist  *bool           `json:"shouldExist,omitempty"`
	System       *bool           `json:"system,omitempty"`
}

// CoreUser is the one user a MachineConfig may configure.
const CoreUser = "core"

// IgnitionStorage is the storage section; machina applies its files.
//
// +kubebuilder:object:generate=false
type IgnitionStorage struct {
	Files []IgnitionFile `json:"files,omitempty"`
	// Refused on a running node, as MCO refuses them.
	Directories json.RawMessage `json:"directories,omitempty"`
	Links       json.RawMessage `json:"links,omitempty"`
	Disks       json.RawMessage `json:"disks,omitempty"`
	Raid        json.RawMessage `json:"raid,omitempty"`
	Filesystems json.RawMessage `json:"filesystems,omitempty"`
	Luks        json.RawMessage `json:"luks,omitempty"`
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
	// User and Group own the file (root when unset).
	User  IgnitionOwner `json:"user,omitempty"`
	Group IgnitionOwner `json:"group,omitempty"`
	// Append is refused, as MCO refuses it.
	Append json.RawMessage `json:"append,omitempty"`
}

// IgnitionOwner names a file's user or group by number or by name (a name
// is looked up in the node's /etc/passwd or /etc/group).
//
// +kubebuilder:object:generate=false
type IgnitionOwner struct {
	ID   *int    `json:"id,omitempty"`
	Name *string `json:"name,omitempty"`
}

// IgnitionFileContents is where a file's data comes from.
//
// +kubebuilder:object:generate=false
type IgnitionFileContents struct {
	// Source is a URL; machina reads data: URLs (RFC 2397).
	Source *string `json:"source,omitempty"`
	// Compression is "" or "gzip".
	Compression *string `json:"compression,omitempty"`
	// Verification.Hash ("sha256-<hex>" or "sha512-<hex>") is checked
	// against the decoded data.
	Verification IgnitionVerification `json:"verification,omitempty"`
	// HTTPHeaders only apply to http(s) sources, which are refused.
	HTTPHeaders json.RawMessage `json:"httpHeaders,omitempty"`
}

// IgnitionVerification is the expected hash of a file's data.
//
// +kubebuilder:object:generate=false
type IgnitionVerification struct {
	Hash *string `json:"hash,omitempty"`
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
// fragment from exhausting the manager's or an agent's memory or the
// node's disk. Contents are decompressed as a stream (IgnitionFile.Open)
// and refused, naming the file, when they pass the bound.
const MaxFileSize = 16 << 20

// MaxTotalFileSize bounds the decoded contents of all files of one config
// together: 0.5 MiB of gzip spread over many files, each under
// MaxFileSize, would otherwise put gigabytes on every node of a pool.
const MaxTotalFileSize = 64 << 20

// MaxRenderedSize bounds a rendered MachineConfig's spec, as JSON. etcd
// stores an object of at most 1.5 MiB (its default request limit); the
// bound leaves room for the object's metadata, so that a rendering that
// passes it can always be stored, and one that does not is refused with a
// condition on the pool instead of failing to be created again and again.
const MaxRenderedSize = 1 << 20

// Linux's limits on a path (PATH_MAX, including its NUL) and on one
// element of it (NAME_MAX): a longer one can never be written, so it is
// refused at render instead of failing on every node.
const (
	MaxPathLength    = 4095
	MaxElementLength = 255
)

// UnitDir is where units and their drop-ins are written on the node.
const UnitDir = "/etc/systemd/system"

// ParseIgnition reads raw (a MachineConfig's spec.config) and checks it: a
// 3.x version (a spec 2.0 to 2.2 config is translated first, IgnitionV3), no key the Ignition specification does not have, none of the
// sections machina refuses on a running node (Refusals), absolute file
// paths, modes within 07777, readable data: URLs whose hash matches, unit
// names. An empty raw is an empty config.
func ParseIgnition(raw []byte) (*Ignition, error) {
	ign := &Ignition{}
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return ign, nil
	}
	raw, err := IgnitionV3(raw)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(ign); err != nil {
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
	if refused := ign.Refusals(); len(refused) > 0 {
		return fmt.Errorf("not applicable to a running node: %s", strings.Join(refused, "; "))
	}
	var total int64
	for _, f := range ign.Storage.Files {
		if err := CheckNodePath(f.Path); err != nil {
			return fmt.Errorf("file %q: %w", f.Path, err)
		}
		if f.Mode != nil && (*f.Mode < 0 || *f.Mode > 0o7777) {
			return fmt.Errorf("file %s: invalid mode %d (want 0 to 4095, that is 0 to 07777)", f.Path, *f.Mode)
		}
		if f.Contents.Compression != nil && *f.Contents.Compression != "" && *f.Contents.Compression != "gzip" {
			return fmt.Errorf("file %s: unsupported compression %q", f.Path, *f.Contents.Compression)
		}
		for _, o := range []struct {
			what  string
			owner IgnitionOwner
		}{{"user", f.User}, {"group", f.Group}} {
			if o.owner.ID != nil && *o.owner.ID < 0 {
				return fmt.Errorf("file %s: %s.id %d is negative", f.Path, o.what, *o.owner.ID)
			}
			if o.owner.ID != nil && o.owner.Name != nil && *o.owner.Name != "" {
				return fmt.Errorf("file %s: %s has both an id and a name", f.Path, o.what)
			}
		}
		// Decoded as a stream into nothing: checked (size, gzip, hash)
		// without holding the contents.
		r, err := f.Open()
		if err != nil {
			return err
		}
		n, err := io.Copy(io.Discard, r)
		if err != nil {
			return err
		}
		if total += n; total > MaxTotalFileSize {
			return fmt.Errorf("file %s: the files' contents add up to more than %d MiB (storage.files together may hold at most that)",
				f.Path, MaxTotalFileSize>>20)
		}
	}
	units := map[string]bool{}
	for _, u := range ign.Systemd.Units {
		if err := CheckUnitName(u.Name); err != nil {
			return fmt.Errorf("unit %q: invalid name: %w", u.Name, err)
		}
		if units[u.Name] {
			return fmt.Errorf("unit %s is defined twice", u.Name)
		}
		units[u.Name] = true
		dropins := map[string]bool{}
		for _, d := range u.Dropins {
			if !fileName(d.Name) || len(d.Name) > MaxElementLength {
				return fmt.Errorf("unit %s: dropin %q: invalid name", u.Name, d.Name)
			}
			if !strings.HasSuffix(d.Name, ".conf") {
				return fmt.Errorf("unit %s: dropin %q: systemd reads only drop-ins whose name ends in .conf", u.Name, d.Name)
			}
			if dropins[d.Name] {
				return fmt.Errorf("unit %s: dropin %s is defined twice", u.Name, d.Name)
			}
			dropins[d.Name] = true
		}
	}
	return ign.checkCollisions()
}

// checkCollisions refuses two writes of one node path, and a write at a
// path another write needs as a directory (a file /etc/a and a file
// /etc/a/b; a file /etc/systemd/system/x.service.d and a drop-in of
// x.service): no node could take both.
func (ign *Ignition) checkCollisions() error {
	written := map[string]string{}
	var paths []string
	add := func(p, what string) error {
		if other, dup := written[p]; dup {
			return fmt.Errorf("%s and %s both write %s", other, what, p)
		}
		written[p] = what
		paths = append(paths, p)
		return nil
	}
	for i, f := range ign.Storage.Files {
		if other, dup := written[f.Path]; dup {
			return fmt.Errorf("file %s is defined twice (%s and storage.files[%d])", f.Path, other, i)
		}
		if err := add(f.Path, fmt.Sprintf("storage.files[%d]", i)); err != nil {
			return err
		}
	}
	for _, u := range ign.Systemd.Units {
		if (u.Mask != nil && *u.Mask) || u.Contents != nil {
			if err := add(path.Join(UnitDir, u.Name), fmt.Sprintf("systemd.units (%s)", u.Name)); err != nil {
				return err
			}
		}
		for _, d := range u.Dropins {
			if err := add(path.Join(UnitDir, u.Name+".d", d.Name), fmt.Sprintf("systemd.units (%s).dropins (%s)", u.Name, d.Name)); err != nil {
				return err
			}
		}
	}
	slices.Sort(paths)
	// Sorted, a path's descendants follow it (after siblings such as
	// "/etc/a.conf" that sort between).
	for i, p := range paths {
		for _, q := range paths[i+1:] {
			if !strings.HasPrefix(q, p) {
				break
			}
			if strings.HasPrefix(q, p+"/") {
				return fmt.Errorf("%s writes %s, which %s needs to be a directory for %s", written[p], p, written[q], q)
			}
		}
	}
	return nil
}

// CheckNodePath checks a path the node agent writes: absolute, clean (no
// ".", "..", "//" or trailing "/"), not the root, without NUL, and within
// Linux's limits (MaxPathLength, MaxElementLength).
func CheckNodePath(p string) error {
	switch {
	case !path.IsAbs(p):
		return errors.New("path is not absolute")
	case strings.ContainsRune(p, 0):
		return errors.New("path contains a NUL byte")
	case slices.Contains(strings.Split(p, "/"), ".."):
		return errors.New("path leaves the node's file system (\"..\")")
	case path.Clean(p) == "/":
		return errors.New("path names the node's root directory")
	case path.Clean(p) != p:
		return fmt.Errorf("path is not clean (write it %s)", path.Clean(p))
	case len(p) > MaxPathLength:
		return fmt.Errorf("path is %d bytes long, more than Linux's %d", len(p), MaxPathLength)
	}
	for _, e := range strings.Split(p[1:], "/") {
		if len(e) > MaxElementLength {
			return fmt.Errorf("path element %.20q... is %d bytes long, more than Linux's %d", e, len(e), MaxElementLength)
		}
	}
	return nil
}

// unitTypes are the suffixes of systemd's unit types.
var unitTypes = []string{"service", "socket", "device", "mount", "automount", "swap", "target", "path", "timer", "slice", "scope"}

// CheckUnitName checks a systemd unit name as systemd does
// (unit_name_is_valid): at most 255 bytes, <prefix>[@[<instance>]].<type>
// with a known type, the prefix and instance made of ASCII letters,
// digits and ":-_.\" (an instance may hold "@" too).
func CheckUnitName(name string) error {
	if len(name) > MaxElementLength {
		return fmt.Errorf("longer than %d bytes", MaxElementLength)
	}
	dot := strings.LastIndexByte(name, '.')
	if dot < 0 || !slices.Contains(unitTypes, name[dot+1:]) {
		return fmt.Errorf("no unit type suffix (one of .%s)", strings.Join(unitTypes, ", ."))
	}
	prefix, instance, templated := strings.Cut(name[:dot], "@")
	if prefix == "" {
		return errors.New("empty name before the type")
	}
	valid := func(s, extra string) bool {
		for _, c := range s {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune(":-_.\\"+extra, c)) {
				return false
			}
		}
		return true
	}
	if !valid(prefix, "") || (templated && !valid(instance, "@")) {
		return errors.New(`only ASCII letters, digits and ":-_.\" are allowed (and "@" before the instance)`)
	}
	return nil
}

// Refusals names every field of the config that machina does not apply to
// a running node, each with why: what Ignition does only at first boot,
// what MCO's daemon also refuses (disks, RAID, file systems, LUKS,
// directories, links, groups, users other than core, fields of core other
// than its SSH keys, append, Ignition's kernelArguments section), and
// remote sources.
func (ign *Ignition) Refusals() []string {
	var out []string
	refuse := func(raw json.RawMessage, field, why string) {
		if !emptyJSON(raw) {
			out = append(out, field+" ("+why+")")
		}
	}
	const firstBoot = "read by Ignition at first boot only"
	refuse(ign.Ignition.Config, "ignition.config", firstBoot)
	refuse(ign.Ignition.Timeouts, "ignition.timeouts", firstBoot)
	refuse(ign.Ignition.Security, "ignition.security", firstBoot)
	refuse(ign.Ignition.Proxy, "ignition.proxy", firstBoot)
	refuse(ign.KernelArguments, "kernelArguments", "use the MachineConfig's spec.kernelArguments")
	const notInPlace = "cannot be changed on a running node"
	refuse(ign.Storage.Disks, "storage.disks", notInPlace)
	refuse(ign.Storage.Raid, "storage.raid", notInPlace)
	refuse(ign.Storage.Filesystems, "storage.filesystems", notInPlace)
	refuse(ign.Storage.Luks, "storage.luks", notInPlace)
	refuse(ign.Storage.Directories, "storage.directories", "only files and systemd units are written")
	refuse(ign.Storage.Links, "storage.links", "only files and systemd units are written")
	refuse(ign.Passwd.Groups, "passwd.groups", "groups are not managed")
	for i, u := range ign.Passwd.Users {
		field := fmt.Sprintf("passwd.users[%d]", i)
		if u.Name != CoreUser {
			out = append(out, fmt.Sprintf("%s (user %q: only the user %q can be configured)", field, u.Name, CoreUser))
			continue
		}
		for _, f := range u.setFields() {
			out = append(out, fmt.Sprintf("%s.%s (of the user %q only sshAuthorizedKeys is applied)", field, f, CoreUser))
		}
	}
	for i, f := range ign.Storage.Files {
		field := fmt.Sprintf("storage.files[%d]", i)
		refuse(f.Append, field+".append", "files are replaced, never appended to")
		refuse(f.Contents.HTTPHeaders, field+".contents.httpHeaders", "only data: URLs are read")
	}
	return out
}

// setFields names the fields of u, other than name and sshAuthorizedKeys,
// that are set.
func (u IgnitionUser) setFields() []string {
	var out []string
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"passwordHash", u.PasswordHash != nil}, {"uid", u.UID != nil}, {"gecos", u.Gecos != nil},
		{"homeDir", u.HomeDir != nil}, {"noCreateHome", u.NoCreateHome != nil}, {"primaryGroup", u.PrimaryGroup != nil},
		{"groups", !emptyJSON(u.Groups)}, {"noUserGroup", u.NoUserGroup != nil}, {"noLogInit", u.NoLogInit != nil},
		{"shell", u.Shell != nil}, {"shouldExist", u.ShouldExist != nil}, {"system", u.System != nil},
	} {
		if f.set {
			out = append(out, f.name)
		}
	}
	return out
}

// emptyJSON tells whether raw says nothing: absent, null, or a value made
// only of empty objects and lists, "", false and 0. Configs rendered by
// Ignition's own types carry such sections ("security":{"tls":{}}); they
// ask for nothing and are not refused.
func emptyJSON(raw json.RawMessage) bool {
	if len(bytes.TrimSpace(raw)) == 0 {
		return true
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return false
	}
	return emptyValue(v)
}

func emptyValue(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case bool:
		return !v
	case float64:
		return v == 0
	case []any:
		for _, e := range v {
			if !emptyValue(e) {
				return false
			}
		}
		return true
	case map[string]any:
		for _, e := range v {
			if !emptyValue(e) {
				return false
			}
		}
		return true
	}
	return false
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
// It holds the whole content (at most MaxFileSize); Open streams it.
func (f IgnitionFile) Data() ([]byte, error) {
	r, err := f.Open()
	if err != nil {
		return nil, err
	}
	return io.ReadAll(r)
}

// Open streams the file's content: decoded from contents.source,
// decompressed as it is read, refused with an error naming the file once
// it passes MaxFileSize, and checked against contents.verification.hash
// at its end (an error then, instead of io.EOF). Memory stays that of the
// decompressor, whatever the content's size.
func (f IgnitionFile) Open() (io.Reader, error) {
	var r io.Reader = strings.NewReader("")
	if f.Contents.Source != nil && *f.Contents.Source != "" {
		var err error
		if r, err = openDataURL(*f.Contents.Source); err != nil {
			return nil, fmt.Errorf("file %s: %w", f.Path, err)
		}
		if f.Contents.Compression != nil && *f.Contents.Compression == "gzip" {
			gz, err := gzip.NewReader(r)
			if err != nil {
				return nil, fmt.Errorf("file %s: gzip: %w", f.Path, err)
			}
			r = &wrapErrors{r: gz, prefix: "file " + f.Path + ": gzip"}
		} else {
			r = &wrapErrors{r: r, prefix: "file " + f.Path}
		}
	}
	c := &checkedReader{r: r, path: f.Path, left: MaxFileSize}
	if h := f.Contents.Verification.Hash; h != nil && *h != "" && f.Contents.Source != nil && *f.Contents.Source != "" {
		algo, sum, ok := strings.Cut(*h, "-")
		switch {
		case !ok:
			return nil, fmt.Errorf("file %s: contents.verification.hash: %q is not <algorithm>-<hex>", f.Path, *h)
		case algo == "sha256":
			c.hash = sha256.New()
		case algo == "sha512":
			c.hash = sha512.New()
		default:
			return nil, fmt.Errorf("file %s: contents.verification.hash: unsupported hash algorithm %q (sha256 or sha512)", f.Path, algo)
		}
		c.algo, c.want = algo, strings.ToLower(sum)
	}
	return c, nil
}

// wrapErrors prefixes the errors of a reader (not io.EOF) with what it
// reads.
type wrapErrors struct {
	r      io.Reader
	prefix string
}

func (w *wrapErrors) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("%s: %w", w.prefix, err)
	}
	return n, err
}

// checkedReader passes at most left bytes, then fails naming the file, and
// checks the data's hash at its end.
type checkedReader struct {
	r    io.Reader
	path string
	left int64
	hash hash.Hash
	algo string
	want string
}

func (c *checkedReader) Read(p []byte) (int, error) {
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		return 0, fmt.Errorf("file %s: content is larger than %d MiB (the limit of one file, decompressed)", c.path, MaxFileSize>>20)
	}
	if c.hash != nil {
		c.hash.Write(p[:n])
		if err == io.EOF {
			if got := hex.EncodeToString(c.hash.Sum(nil)); got != c.want {
				return n, fmt.Errorf("file %s: contents.verification.hash: the data's %s is %s, not %s", c.path, c.algo, got, c.want)
			}
		}
	}
	return n, err
}

// DecodeDataURL decodes an RFC 2397 data: URL ("data:[<mediatype>][;base64],<data>").
// Other URL schemes are refused: machina reads no remote contents.
func DecodeDataURL(s string) ([]byte, error) {
	rest, ok := strings.CutPrefix(s, "data:")
	if !ok {
		return nil, errNotData(s)
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

// openDataURL is DecodeDataURL as a stream: base64 is decoded as it is
// read (percent-encoding, bounded by the config's own size, at once).
func openDataURL(s string) (io.Reader, error) {
	rest, ok := strings.CutPrefix(s, "data:")
	if !ok {
		return nil, errNotData(s)
	}
	meta, payload, ok := strings.Cut(rest, ",")
	if !ok {
		return nil, fmt.Errorf("contents.source: data URL without a comma")
	}
	if strings.HasSuffix(meta, ";base64") {
		// Padded or not (some writers drop it): decoded without.
		return &wrapErrors{r: base64.NewDecoder(base64.RawStdEncoding, strings.NewReader(strings.TrimRight(payload, "="))),
			prefix: "contents.source: bad base64 data"}, nil
	}
	data, err := url.PathUnescape(payload)
	if err != nil {
		return nil, fmt.Errorf("contents.source: bad percent-encoding: %w", err)
	}
	return strings.NewReader(data), nil
}

func errNotData(s string) error {
	scheme, _, _ := strings.Cut(s, ":")
	return fmt.Errorf("contents.source: unsupported URL scheme %q (only data: URLs are supported)", scheme)
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
