// Package sdk is the Go SDK for machina driver authors.
package sdk
