// Package nodeinmemory holds the Go tests of the machina in-memory driver
// written in Node.js (main.js and lib/ in this directory). The tests start
// the Node.js driver as a real process on a real Unix socket and run the
// conformance suite (connected and in launcher mode) and process checks
// against it; the package has no code of its own.
//
// The driver needs node (v20 or later) and the packages of package-lock.json
// in node_modules/. The tests find node on PATH (set MACHINA_NODE to use
// another) and fail, saying so, when it is missing; they run
// `npm ci --ignore-scripts --no-audit --no-fund` here themselves when
// node_modules/ was not installed from the current package-lock.json.
package nodeinmemory
