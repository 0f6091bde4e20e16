// Package safetytest has the fixtures the safety controllers' tests share:
// the core's driver client connected to a driver the test serves, a manager
// on a real API server, fresh namespaces, and a TCP proxy that makes an API
// server unreachable on demand.
//
// It is imported by tests only.
package safetytest
