package conformance

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// Config tells the suite how to reach a driver and what to send it. Only
// Endpoint and MachineClass.ProviderSpec are required; every other field has
// a default (see the field comments).
type Config struct {
	// Endpoint is the driver's address: unix:///path/to/driver.sock, or
	// tcp://host:port for a driver served over TCP during development.
	Endpoint string

	// Launch, when set, makes the suite start the driver itself (the
	// launcher mode, launcher.go): it starts the driver on an endpoint of its
	// own, which replaces Endpoint (leave Endpoint empty), runs every check
	// against it, and adds the Launcher checks of the §2 rules only a
	// launch can show.
	Launch *Launch

	// MachineClass is sent in every request that carries a class.
	MachineClass MachineClass

	// IncompatibleProviderSpec is a provider spec that the driver must treat
	// as incompatible with MachineClass.ProviderSpec for an existing VM, so
	// that a repeated CreateMachine with it answers ALREADY_EXISTS (§6.1).
	// Default: MachineClass.ProviderSpec with one extra top-level key,
	// "machinaConformanceIncompatible". A driver that ignores unknown keys
	// must be given a spec that differs in a field it interprets.
	IncompatibleProviderSpec json.RawMessage
	// UpdatedProviderSpec is a provider spec the driver applies to a VM
	// created with MachineClass.ProviderSpec without replacing it, for the
	// UpdateMachine checks (§6.7): MachineClass.ProviderSpec with a tag or
	// label changed, say. Without it UpdateMachine/applies_in_place is
	// skipped; the other UpdateMachine checks still run.
	UpdatedProviderSpec json.RawMessage
	// NeedsNewVMProviderSpec is a provider spec the driver cannot apply to a
	// running VM created with MachineClass.ProviderSpec (another image or
	// machine type), so that UpdateMachine answers needs_new_vm (§6.7).
	// Default: IncompatibleProviderSpec.
	NeedsNewVMProviderSpec json.RawMessage

	// NodeTemplate is sent as Machine.node_template. Optional.
	NodeTemplate *driverv1alpha1.NodeTemplate

	// Secrets is the secret data sent with every call. The suite adds one
	// key of its own, CanarySecretKey, whose value must never be echoed.
	Secrets map[string][]byte

	// UserData is sent as CreateMachineRequest.user_data when the suite
	// creates a VM it expects to succeed. Optional.
	UserData []byte

	// NamePrefix starts the name of every machine the suite creates; the
	// suite adds a random run ID after it so that runs do not collide.
	// ListMachines results are judged only within this prefix: other VMs of
	// the backend are ignored. Default: "conformance-".
	NamePrefix string

	// Namespace is sent as Machine.namespace. Default: "default".
	Namespace string

	// Timeouts bounds every call the suite makes.
	Timeouts Timeouts

	// IdempotentCount is how many times an idempotent call is repeated
	// (CreateMachine with the same request, DeleteMachine of a deleted VM).
	// Default: 3.
	IdempotentCount int

	// Concurrency is how many distinct machines are created and deleted in
	// parallel by the concurrency test (§9). Default: 3.
	Concurrency int

	// Volumes are fixtures for GetVolumeIDs (§6.6): persistent volumes and
	// the volume ID the driver must map each to, or NotMine. Without them the
	// mapping test is skipped; the other GetVolumeIDs checks still run.
	Volumes []VolumeFixture

	// ShortDeadline is the deadline of the calls of the deadline test (§10).
	// Default: 1s.
	ShortDeadline time.Duration

	// DeadlineGrace is how long after ShortDeadline an answer may still
	// arrive before the driver is judged to ignore deadlines. Default: 2s.
	DeadlineGrace time.Duration
}

// MachineClass is the class the suite sends; it mirrors the fields of a
// machine.sapcloud.io/v1alpha1 MachineClass that reach a driver.
type MachineClass struct {
	// Name is sent as machine_class.name. Default: "machina-conformance".
	Name string
	// Provider is sent as machine_class.provider. Optional.
	Provider string
	// ProviderSpec is the provider configuration, a JSON object. Required.
	ProviderSpec json.RawMessage
	// NodeTemplate is sent as machine_class.node_template. Optional.
	NodeTemplate *driverv1alpha1.ClassNodeTemplate
}

// Timeouts bounds the calls of the suite, one value per RPC. A call that gets
// no answer in time fails its test with a §10 message.
type Timeouts struct {
	// Identity bounds GetPluginInfo, GetPluginCapabilities and Probe.
	// Default: 10s.
	Identity time.Duration
	// Ready is how long the suite waits for Probe to report ready before it
	// starts. Default: 1m.
	Ready time.Duration
	// Create bounds CreateMachine. Default: 5m.
	Create time.Duration
	// Initialize bounds InitializeMachine. Default: 5m.
	Initialize time.Duration
	// Delete bounds DeleteMachine. Default: 5m.
	Delete time.Duration
	// Status bounds GetMachineStatus. Default: 1m.
	Status time.Duration
	// List bounds ListMachines, and how long a check waits for a VM just
	// created to appear in its answer (provider list APIs may lag behind
	// their creations). Default: 1m.
	List time.Duration
	// VolumeIDs bounds GetVolumeIDs. Default: 1m.
	VolumeIDs time.Duration
}

// VolumeFixture is one persistent volume for the GetVolumeIDs test and what
// the driver must answer for it.
type VolumeFixture struct {
	// Name is the PersistentVolume's name.
	Name string
	// Spec is the PersistentVolume's spec as Kubernetes JSON. The suite
	// extracts spec.csi.driver and spec.csi.volumeHandle from it the way the
	// core does.
	Spec json.RawMessage
	// VolumeID is the ID the driver must map this volume to. Leave empty
	// and set NotMine for a volume the driver must not recognise.
	VolumeID string
	// NotMine means the driver must leave this volume out of its answer.
	NotMine bool
}

// Default values of Config, applied by withDefaults.
const (
	DefaultNamePrefix      = "conformance-"
	DefaultNamespace       = "default"
	DefaultClassName       = "machina-conformance"
	DefaultIdempotentCount = 3
	DefaultConcurrency     = 3
	DefaultShortDeadline   = time.Second
	DefaultDeadlineGrace   = 2 * time.Second

	// CanarySecretKey is the key of the secret the suite adds to
	// Config.Secrets. Its value is random per run and must never appear in
	// an error message (§8).
	CanarySecretKey = "machina-conformance-canary"

	// incompatibleKey is the key added to the provider spec to derive the
	// default IncompatibleProviderSpec.
	incompatibleKey = "machinaConformanceIncompatible"

	// maxPrefixLen keeps generated machine names short: many clouds limit
	// VM names to 63 characters, and the suite appends a run ID and a
	// purpose of up to 20 characters.
	maxPrefixLen = 30
)

// DefaultTimeouts are the timeouts used for every zero field of
// Config.Timeouts. They suit a real cloud; an in-memory driver can use far
// shorter ones.
var DefaultTimeouts = Timeouts{
	Identity:   10 * time.Second,
	Ready:      time.Minute,
	Create:     5 * time.Minute,
	Initialize: 5 * time.Minute,
	Delete:     5 * time.Minute,
	Status:     time.Minute,
	List:       time.Minute,
	VolumeIDs:  time.Minute,
}

// prefixPattern is what a name prefix may contain: the start of a DNS-1123
// label, so that every generated machine name is a valid subdomain.
var prefixPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// Validate reports why c cannot be used, or nil. Run and RunT fail with the
// same error; Validate lets a caller (the binary) check a Config before it
// starts a run.
func (c Config) Validate() error {
	_, err := c.withDefaults()
	return err
}

// withDefaults returns a copy of c with defaults filled in, or an error when
// c cannot be used.
func (c Config) withDefaults() (Config, error) {
	if c.Launch != nil {
		if err := c.Launch.validate(); err != nil {
			return c, fmt.Errorf("Launch: %w", err)
		}
		if c.Endpoint == "" {
			// RunT sets it to the launched driver's endpoint.
			c.Endpoint = launchPlaceholder
		}
	}
	if c.Endpoint == "" {
		return c, errors.New("an Endpoint is required")
	}
	if _, _, err := parseEndpoint(c.Endpoint); err != nil {
		return c, err
	}
	if err := checkJSONObject(c.MachineClass.ProviderSpec); err != nil {
		return c, fmt.Errorf("MachineClass.ProviderSpec: %w", err)
	}
	if c.MachineClass.Name == "" {
		c.MachineClass.Name = DefaultClassName
	}
	if len(c.IncompatibleProviderSpec) == 0 {
		spec, err := deriveIncompatible(c.MachineClass.ProviderSpec)
		if err != nil {
			return c, err
		}
		c.IncompatibleProviderSpec = spec
	} else if err := checkJSONObject(c.IncompatibleProviderSpec); err != nil {
		return c, fmt.Errorf("IncompatibleProviderSpec: %w", err)
	}
	if len(c.NeedsNewVMProviderSpec) == 0 {
		c.NeedsNewVMProviderSpec = c.IncompatibleProviderSpec
	} else if err := checkJSONObject(c.NeedsNewVMProviderSpec); err != nil {
		return c, fmt.Errorf("NeedsNewVMProviderSpec: %w", err)
	}
	if len(c.UpdatedProviderSpec) > 0 {
		if err := checkJSONObject(c.UpdatedProviderSpec); err != nil {
			return c, fmt.Errorf("UpdatedProviderSpec: %w", err)
		}
	}
	if c.NamePrefix == "" {
		c.NamePrefix = DefaultNamePrefix
	}
	if len(c.NamePrefix) > maxPrefixLen || !prefixPattern.MatchString(c.NamePrefix) {
		return c, fmt.Errorf("NamePrefix %q must be at most %d characters of a-z, 0-9 and '-', starting with a letter or digit", c.NamePrefix, maxPrefixLen)
	}
	if c.Namespace == "" {
		c.Namespace = DefaultNamespace
	}
	if c.IdempotentCount <= 0 {
		c.IdempotentCount = DefaultIdempotentCount
	}
	if c.Concurrency <= 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.ShortDeadline <= 0 {
		c.ShortDeadline = DefaultShortDeadline
	}
	if c.DeadlineGrace <= 0 {
		c.DeadlineGrace = DefaultDeadlineGrace
	}
	c.Timeouts = c.Timeouts.withDefaults()
	if _, ok := c.Secrets[CanarySecretKey]; ok {
		return c, fmt.Errorf("the suite's own key %q must not be in Secrets", CanarySecretKey)
	}
	for i, v := range c.Volumes {
		switch {
		case v.Name == "":
			return c, fmt.Errorf("Volumes[%d].Name is required", i)
		case v.NotMine == (v.VolumeID != ""):
			return c, fmt.Errorf("volume %q (Volumes[%d]): set exactly one of VolumeID and NotMine", v.Name, i)
		}
		if err := checkJSONObject(v.Spec); err != nil {
			return c, fmt.Errorf("Volumes[%d].Spec (%s): %w", i, v.Name, err)
		}
	}
	return c, nil
}

func (t Timeouts) withDefaults() Timeouts {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&t.Identity, DefaultTimeouts.Identity)
	def(&t.Ready, DefaultTimeouts.Ready)
	def(&t.Create, DefaultTimeouts.Create)
	def(&t.Initialize, DefaultTimeouts.Initialize)
	def(&t.Delete, DefaultTimeouts.Delete)
	def(&t.Status, DefaultTimeouts.Status)
	def(&t.List, DefaultTimeouts.List)
	def(&t.VolumeIDs, DefaultTimeouts.VolumeIDs)
	return t
}

// checkJSONObject reports whether raw is a JSON object, as the Driver API
// requires of provider specs.
func checkJSONObject(raw json.RawMessage) error {
	if len(raw) == 0 {
		return errors.New("is required")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return errors.New("must be a JSON object")
	}
	return nil
}

// deriveIncompatible adds incompatibleKey to a provider spec object.
func deriveIncompatible(spec json.RawMessage) (json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(spec, &obj); err != nil {
		return nil, fmt.Errorf("MachineClass.ProviderSpec: %w", err)
	}
	obj[incompatibleKey] = json.RawMessage(`"differs"`)
	return json.Marshal(obj)
}
