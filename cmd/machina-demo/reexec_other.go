//go:build unix && !linux

package main

// execAsset does nothing outside Linux: envtest starts the real binaries.
func execAsset() {}
