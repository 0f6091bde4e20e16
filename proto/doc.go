// Package proto holds the Driver API: the .proto files under machina/ and the
// Go code generated from them. The specification is docs/driver-api.md.
package proto
