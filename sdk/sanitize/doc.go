// Package sanitize removes secrets from Driver API messages before they are
// written anywhere: logs, events, error messages or status fields.
//
// A field is secret when its descriptor carries the field option
// (machina.driver.v1alpha1.secret) = true. The package finds such fields by
// reflection, so it works for every proto message (the Driver API's own,
// messages of a later API version, or dynamic messages) without a list of
// field names that could go stale.
//
// The package has no server code and no Kubernetes dependencies, so both the
// driver SDK and the core use it.
package sanitize
