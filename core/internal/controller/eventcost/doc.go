// Package eventcost holds a test only: it measures what one reconcile of one
// object costs the Machine, MachineSet, Node, class update and overshoot
// controllers, and what one Node heartbeat costs the manager's cache
// (the watch event decoded, trimmed by the manager's transform and stored),
// in allocations and bytes, which do not depend on the machine's load as
// times do, with a fleet of N and of 8N other machines in the same API
// server cache, and fails if the cost grows with the fleet: a list of every
// machine per event, copied out of the cache, would make it grow about
// eightfold. A scan that copies nothing allocates nothing and is not seen.
// The Nodes carry a kubelet's full status (50 images, nodeInfo), and the
// heartbeats come from a process of their own, so that only the manager's
// side is counted. See docs/performance.md.
package eventcost
