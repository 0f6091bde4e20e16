// Package sanitize removes secrets from Driver API messages before they are
// written anywhere: logs, events, error messages or status fields.
//
// A field is secret when its descriptor carries the field option
// (machina.driver.v1alpha1.secret) = true. The package finds such fields by
// reflection, so it works for every proto message (the Driver API's own,
// messages of a later API version, or dynamic messages) without a list of
// field names that could go stale.
//
// It lives in the proto module, beside the messages it works on, because it
// needs nothing but protobuf: the driver SDK and the core both import it from
// here, so the core needs no edge to the SDK.
package sanitize
