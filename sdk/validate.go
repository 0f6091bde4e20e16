package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
	"google.golang.org/grpc"
)

// Limits of the Driver API. Requests beyond them are rejected before they
// reach the driver.
const (
	maxObjectNameLength  = 253
	maxNamespaceLength   = 63
	maxProviderSpecBytes = 256 << 10
	maxSecretEntries     = 64
	maxSecretsBytes      = 1 << 20
	maxUserDataBytes     = 1 << 20
	maxProviderIDBytes   = 2048
	maxLastKnownState    = 64 << 10
	maxVolumes           = 1024
	maxVolumeSpecBytes   = 64 << 10
	maxUIDBytes          = 128
	maxOtherStringBytes  = 4096
)

var (
	dns1123SubdomainRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	dns1123LabelRE     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
)

// validateRequests rejects an invalid request with INVALID_ARGUMENT naming
// the offending field, so that drivers need not repeat these checks and a
// broken core is told exactly what it sent wrong. Error messages name the
// field and the rule, never echo secret values.
func validateRequests(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if err := validateRequest(req); err != nil {
		return nil, InvalidArgument("%s", err.Error())
	}
	return handler(ctx, req)
}

func validateRequest(req any) error {
	switch r := req.(type) {
	case *driverv1alpha1.CreateMachineRequest:
		return firstError(
			validateMachine(r.GetMachine(), false),
			validateMachineClass(r.GetMachineClass()),
			validateSameNamespace(r.GetMachine(), r.GetMachineClass()),
			validateSecrets(r.GetSecrets()),
			maxBytes("user_data", len(r.GetUserData()), maxUserDataBytes),
			maxBytes("last_known_state", len(r.GetLastKnownState()), maxLastKnownState),
		)
	case *driverv1alpha1.InitializeMachineRequest:
		return firstError(
			validateMachine(r.GetMachine(), true),
			validateMachineClass(r.GetMachineClass()),
			validateSecrets(r.GetSecrets()),
			maxBytes("last_known_state", len(r.GetLastKnownState()), maxLastKnownState),
		)
	case *driverv1alpha1.DeleteMachineRequest:
		return firstError(
			validateMachine(r.GetMachine(), false),
			validateMachineClass(r.GetMachineClass()),
			validateSecrets(r.GetSecrets()),
			maxBytes("last_known_state", len(r.GetLastKnownState()), maxLastKnownState),
		)
	case *driverv1alpha1.GetMachineStatusRequest:
		return firstError(
			validateMachine(r.GetMachine(), false),
			validateMachineClass(r.GetMachineClass()),
			validateSecrets(r.GetSecrets()),
		)
	case *driverv1alpha1.ListMachinesRequest:
		return firstError(
			validateMachineClass(r.GetMachineClass()),
			validateSecrets(r.GetSecrets()),
		)
	case *driverv1alpha1.GetVolumeIDsRequest:
		return validateVolumes(r.GetVolumes())
	case *driverv1alpha1.UpdateMachineRequest:
		return firstError(
			validateMachine(r.GetMachine(), true),
			validateClass(oldMachineClassFields, r.GetOldMachineClass()),
			validateMachineClass(r.GetMachineClass()),
			validateSecrets(r.GetSecrets()),
			maxBytes("last_known_state", len(r.GetLastKnownState()), maxLastKnownState),
		)
	}
	// Identity RPCs have no arguments.
	return nil
}

func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func validateMachine(m *driverv1alpha1.Machine, needProviderID bool) error {
	if m == nil {
		return fmt.Errorf("machine is required")
	}
	if err := validateObjectName("machine.name", m.GetName()); err != nil {
		return err
	}
	if err := validateNamespace("machine.namespace", m.GetNamespace()); err != nil {
		return err
	}
	if needProviderID && m.GetProviderId() == "" {
		return fmt.Errorf("machine.provider_id is required")
	}
	return firstError(
		maxBytes("machine.provider_id", len(m.GetProviderId()), maxProviderIDBytes),
		maxBytes("machine.uid", len(m.GetUid()), maxUIDBytes),
	)
}

func validateMachineClass(c *driverv1alpha1.MachineClass) error {
	return validateClass(machineClassFields, c)
}

// classFields names a class's fields in the errors of validateClass. They
// are built once rather than per call: every call that carries a class is
// validated, and only a refused one needs the names.
type classFields struct{ class, name, namespace, providerSpec string }

func classFieldNames(class string) classFields {
	return classFields{class, class + ".name", class + ".namespace", class + ".provider_spec"}
}

var (
	machineClassFields    = classFieldNames("machine_class")
	oldMachineClassFields = classFieldNames("old_machine_class")
)

// validateClass checks the class in the request's field of that name
// (UpdateMachine carries two).
func validateClass(field classFields, c *driverv1alpha1.MachineClass) error {
	if c == nil {
		return fmt.Errorf("%s is required", field.class)
	}
	if err := validateObjectName(field.name, c.GetName()); err != nil {
		return err
	}
	if err := validateNamespace(field.namespace, c.GetNamespace()); err != nil {
		return err
	}
	return validateProviderSpecField(field.providerSpec, c.GetProviderSpec())
}

// validateSameNamespace refuses a create whose class is in another
// namespace than its machine (Driver API §4.9): the core never sends one,
// and the VM would be listed in that namespace's class scope, where no
// Machine claims it. Only CreateMachine is refused; the other RPCs look the
// VM up by machine.namespace.
func validateSameNamespace(m *driverv1alpha1.Machine, c *driverv1alpha1.MachineClass) error {
	if m.GetNamespace() != c.GetNamespace() {
		return fmt.Errorf("machine_class.namespace %q must equal machine.namespace %q", c.GetNamespace(), m.GetNamespace())
	}
	return nil
}

func validateNamespace(field, ns string) error {
	switch {
	case ns == "":
		return fmt.Errorf("%s is required", field)
	case len(ns) > maxNamespaceLength || !dns1123LabelRE.MatchString(ns):
		return fmt.Errorf("%s %q must be a DNS-1123 label (lower-case alphanumerics and '-', at most %d characters)", field, ns, maxNamespaceLength)
	}
	return nil
}

func validateObjectName(field, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%s is required", field)
	case len(name) > maxObjectNameLength:
		return fmt.Errorf("%s is %d characters long, at most %d are allowed", field, len(name), maxObjectNameLength)
	case !dns1123SubdomainRE.MatchString(name):
		return fmt.Errorf("%s %q must be a DNS-1123 subdomain (lower-case alphanumerics, '-' and '.', starting and ending with an alphanumeric)", field, name)
	}
	return nil
}

// validateProviderSpec checks that the spec is one JSON object. Its content
// is the driver's business, and is not quoted in the error: a provider spec
// may hold values its owner would not want in a log.
func validateProviderSpec(spec []byte) error {
	return validateProviderSpecField("machine_class.provider_spec", spec)
}

func validateProviderSpecField(field string, spec []byte) error {
	if len(spec) == 0 {
		return fmt.Errorf("%s is required", field)
	}
	if err := maxBytes(field, len(spec), maxProviderSpecBytes); err != nil {
		return err
	}
	if !isJSONObject(spec) {
		return fmt.Errorf("%s must be a JSON object", field)
	}
	return nil
}

// jsonWhitespace is the white space RFC 8259 (section 2) allows around
// JSON values: space, tab, line feed and carriage return. Nothing else (a
// form feed, a no-break space, other Unicode spaces) is JSON, so validation
// must not trim it where the decoder would then refuse it.
const jsonWhitespace = " \t\n\r"

// isJSONObject reports whether b is exactly one JSON object, with only JSON
// white space around it: the same bytes encoding/json decodes.
func isJSONObject(b []byte) bool {
	trimmed := bytes.TrimLeft(b, jsonWhitespace)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return false
	}
	// json.Valid accepts exactly what json.Unmarshal decodes, one value
	// with white space around it, without building the object: every call
	// that carries a class is checked.
	return json.Valid(b)
}

func validateSecrets(secrets map[string][]byte) error {
	if len(secrets) > maxSecretEntries {
		return fmt.Errorf("secrets has %d entries, at most %d are allowed", len(secrets), maxSecretEntries)
	}
	total := 0
	for k, v := range secrets {
		total += len(k) + len(v)
	}
	return maxBytes("secrets", total, maxSecretsBytes)
}

func validateVolumes(volumes []*driverv1alpha1.PersistentVolume) error {
	switch {
	case len(volumes) == 0:
		return fmt.Errorf("volumes is required: at least one volume")
	case len(volumes) > maxVolumes:
		return fmt.Errorf("volumes has %d entries, at most %d are allowed", len(volumes), maxVolumes)
	}
	first := make(map[string]int, len(volumes))
	for i, v := range volumes {
		field := fmt.Sprintf("volumes[%d]", i)
		if v == nil {
			return fmt.Errorf("%s is required", field)
		}
		if err := validateObjectName(field+".name", v.GetName()); err != nil {
			return err
		}
		// The answer names volumes by name, so a name sent twice could
		// not be answered unambiguously; the core never sends one (§6.6.4).
		if j, dup := first[v.GetName()]; dup {
			return fmt.Errorf("%s.name %q repeats volumes[%d].name", field, v.GetName(), j)
		}
		first[v.GetName()] = i
		if err := validateVolumeSpec(field+".spec", v.GetSpec()); err != nil {
			return err
		}
		if err := firstError(
			maxBytes(field+".csi_driver", len(v.GetCsiDriver()), maxOtherStringBytes),
			maxBytes(field+".csi_volume_handle", len(v.GetCsiVolumeHandle()), maxOtherStringBytes),
		); err != nil {
			return err
		}
	}
	return nil
}

// validateVolumeSpec checks that a PersistentVolume spec is a JSON object
// (a core/v1 PersistentVolumeSpec), without quoting it.
func validateVolumeSpec(field string, spec []byte) error {
	switch {
	case len(spec) == 0:
		return fmt.Errorf("%s is required", field)
	case len(spec) > maxVolumeSpecBytes:
		return maxBytes(field, len(spec), maxVolumeSpecBytes)
	case !json.Valid(spec):
		return fmt.Errorf("%s is not valid JSON", field)
	case !isJSONObject(spec):
		return fmt.Errorf("%s must be a JSON object", field)
	}
	return nil
}

func maxBytes(field string, n, limit int) error {
	if n > limit {
		return fmt.Errorf("%s is %d bytes, at most %d are allowed", field, n, limit)
	}
	return nil
}
