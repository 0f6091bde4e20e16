// Package eventcost holds a test only: it measures what one reconcile of one
// object costs the Machine, MachineSet and Node controllers (allocations and bytes,
// which do not depend on the machine's load as times do) with a fleet of N
// and of 8N other machines in the same API server cache, and fails if the
// cost grows with the fleet: a list or scan of every machine per event
// would make it grow about eightfold. See docs/performance.md.
package eventcost
