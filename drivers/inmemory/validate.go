package inmemory

import (
	"regexp"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// dnsSubdomain is a DNS-1123 subdomain, the rule for Machine and Node names.
var dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

func invalid(format string, args ...any) error {
	return status.Errorf(codes.InvalidArgument, format, args...)
}

// checkMachine validates the REQUIRED fields of a request's machine.
func checkMachine(m *driverv1alpha1.Machine) error {
	switch {
	case m == nil:
		return invalid("machine is required")
	case m.GetName() == "":
		return invalid("machine.name is required")
	case len(m.GetName()) > 253 || !dnsSubdomain.MatchString(m.GetName()):
		return invalid("machine.name %q is not a DNS-1123 subdomain", m.GetName())
	case m.GetNamespace() == "":
		return invalid("machine.namespace is required")
	}
	return nil
}

// checkClass validates the REQUIRED fields of a request's machine class,
// not its provider spec (see parseProviderSpec).
func checkClass(c *driverv1alpha1.MachineClass, path string) error {
	switch {
	case c == nil:
		return invalid("%s is required", path)
	case c.GetName() == "":
		return invalid("%s.name is required", path)
	case c.GetNamespace() == "":
		return invalid("%s.namespace is required", path)
	}
	return nil
}

// checkSameNamespace refuses a create whose class is in another namespace
// than its machine: the VM would be listed in that namespace's scope, where
// no Machine claims it (§4.9).
func checkSameNamespace(m *driverv1alpha1.Machine, c *driverv1alpha1.MachineClass) error {
	if c.GetNamespace() != m.GetNamespace() {
		return invalid("machine_class.namespace %q must equal machine.namespace %q", c.GetNamespace(), m.GetNamespace())
	}
	return nil
}

// checkMachineAndClass validates the machine and machine_class of a request.
func checkMachineAndClass(m *driverv1alpha1.Machine, c *driverv1alpha1.MachineClass) error {
	if err := checkMachine(m); err != nil {
		return err
	}
	return checkClass(c, "machine_class")
}

// Size limits of the Driver API for secrets and user data.
const (
	maxSecretEntries = 64
	maxSecretBytes   = 1 << 20
	maxUserData      = 1 << 20
)

// checkSecrets enforces the size limits of secrets and user data. Its
// messages name sizes only, never keys or values.
func checkSecrets(secrets map[string][]byte, userData []byte) error {
	if len(secrets) > maxSecretEntries {
		return invalid("secrets has %d entries, more than %d", len(secrets), maxSecretEntries)
	}
	total := 0
	for k, v := range secrets {
		total += len(k) + len(v)
	}
	if total > maxSecretBytes {
		return invalid("secrets hold %d bytes, more than 1 MiB", total)
	}
	if len(userData) > maxUserData {
		return invalid("user_data is %d bytes, more than 1 MiB", len(userData))
	}
	return nil
}
