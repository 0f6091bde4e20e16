// Package safetytest has the fixtures the safety controllers' tests share:
// an inmemory driver served on a real Unix socket with the core's driver
// client connected to it, a manager on a real API server, fresh namespaces,
// and a TCP proxy that makes an API server unreachable on demand.
//
// It is imported by tests only.
package safetytest
