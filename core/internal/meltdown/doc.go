// Package meltdown limits how many machines of one MachineDeployment the
// Machine controller may declare Failed by the health timeout at the same
// time ("meltdown protection").
//
// When a whole zone or the network fails, every machine turns Unknown at
// once. Replacing all of them together would throw away every node (and its
// local state) for a problem new machines cannot fix, and hammer the
// provider with creates. MCM therefore moves only one machine per
// MachineDeployment from Unknown to Failed at a time; machina makes that
// number configurable, as an absolute count or as a percentage of the
// deployment's replicas:
//
//   - the flag --machine-max-replacements (FlagName, default "1", MCM's fixed
//     value) sets it for every deployment;
//   - the annotation machina.io/max-replacements (Annotation) on a
//     MachineDeployment overrides it for that deployment.
//
// A machine may be failed only while fewer than the limit of its
// deployment's machines are already being replaced: not Running, Unknown or
// Available (inProgress), or holding a permit this process granted and the
// cache does not show yet (permits.go). The Guard puts the three together for
// the Machine controller.
package meltdown
