// Package mcfg holds what the machine configuration controllers (mcrender,
// mcpool, mckubelet, mctemplate, mcruntime) share: the version they stamp on
// what they generate, the merge order of MachineConfigs, which pool drives a
// Node, and the writing of generated MachineConfigs. It is a leaf: it
// imports no controller package, so the controllers depend on it and never
// on each other.
package mcfg
