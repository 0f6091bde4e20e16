// Package driverclass turns a MachineClass and its Secrets into what the
// Driver API carries for it: the MachineClass message (§4.9) and the merged
// secret data (§4.5). The Machine controller and the orphan collector share
// it, so that every driver call describes a class the same way.
package driverclass
