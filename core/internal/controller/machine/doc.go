// Package machine is the Machine controller: it creates the VM of a Machine
// through the driver, waits for its Node to join and watches its health,
// keeps the Node's labels, annotations and taints in line with the
// Machine's node template, and on deletion drains the Node, deletes the VM
// and the Node, and releases the Machine.
//
// A reconcile reads like a table of contents (machine_controller.go): it
// gathers what it read into a scope, runs small phase functions over it
// (machine_create.go, machine_nodetemplate.go, machine_health.go, or
// machine_delete.go on the delete path), and writes the Machine once at the
// end, only if something changed (machine_status.go). What a driver error
// code leads to is a table (retry.go), as the Driver API specification
// (docs/driver-api.md) and docs/machine-lifecycle.md describe it.
package machine
