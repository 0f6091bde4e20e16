// Package conformance validates a machina driver against docs/driver-api.md.
package conformance
