// Package mcfg holds what the machine configuration controllers (mcrender,
// mcgc, mcpool, mcdrain, mckubelet, mctemplate, mcruntime) share: the
// version they stamp on what they generate, the merge order of
// MachineConfigs, which of them are rendered, which pool drives a Node,
// and the writing of generated MachineConfigs. It is a leaf: it imports no
// controller package, so the controllers depend on it and never on each
// other.
package mcfg
