// Package conformance validates a machina driver against docs/driver-api.md.
package conformance

// The table of the spec's sentences and docs/conformance-matrix.md.
//go:generate go run ./internal/tracegen
