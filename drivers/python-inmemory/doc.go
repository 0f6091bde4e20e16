// Package pythoninmemory holds the Go tests of the machina in-memory driver
// written in Python (main.py and machina_inmemory/ in this directory). The
// tests start the Python driver as a real process on a real Unix socket and
// run the conformance suite, process checks and an end-to-end test with the
// machina manager against it; the package has no code of its own.
//
// The driver needs Debian's python3-grpcio and python3-protobuf, run by
// /usr/bin/python3 (set MACHINA_PYTHON to use another interpreter). The
// tests fail, naming the packages, when they are missing.
package pythoninmemory
