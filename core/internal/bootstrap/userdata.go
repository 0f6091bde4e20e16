package bootstrap

import (
	"bytes"
	"net/url"
)

// Placeholders the user data (the "userData" key of the MachineClass
// secret) may contain. They are MCM's, so existing cloud-init templates keep
// working.
const (
	// machineNamePlaceholder is replaced by the Machine's name.
	machineNamePlaceholder = "<<MACHINE_NAME>>"
	// bootstrapTokenPlaceholder is replaced by a bootstrap token
	// ("<id>.<secret>") created for the machine.
	bootstrapTokenPlaceholder = "<<BOOTSTRAP_TOKEN>>"
)

// NeedsToken tells whether the user data asks for a bootstrap token, in
// plain or URL-encoded form. Machines whose user data does not ask for one
// get none.
func NeedsToken(userData []byte) bool {
	return bytes.Contains(userData, []byte(bootstrapTokenPlaceholder)) ||
		bytes.Contains(userData, []byte(url.QueryEscape(bootstrapTokenPlaceholder)))
}

// Render returns a copy of userData with the placeholders replaced by
// machineName and token. URL-encoded placeholders (as found in user data
// that embeds a URL, e.g. an ignition config) get URL-encoded values.
// The input is never modified: it usually belongs to a cached Secret.
func Render(userData []byte, machineName, token string) []byte {
	out := bytes.Clone(userData)
	replace := func(placeholder, value string) {
		out = bytes.ReplaceAll(out, []byte(placeholder), []byte(value))
		out = bytes.ReplaceAll(out, []byte(url.QueryEscape(placeholder)), []byte(url.QueryEscape(value)))
	}
	replace(machineNamePlaceholder, machineName)
	replace(bootstrapTokenPlaceholder, token)
	return out
}
