// Package machineclass is the MachineClass controller. It keeps MCM's
// finalizer (machine.sapcloud.io/machine-controller-manager) on every
// MachineClass that is not being deleted, and releases a class that is being
// deleted only once no Machine, MachineSet template or MachineDeployment
// template refers to it any more. While references remain, deletion is held
// and an event on the class names the objects that still use it.
//
// The finalizer is added to every live class, not only to referenced ones,
// as MCM does: a class that gains its first Machine in the same moment it is
// deleted would otherwise vanish under that Machine, which then could neither
// be created nor, worse, have its VM deleted.
//
// A live class's ScaleFromZero and DriverFound conditions are written in one
// status patch through setup.Patcher, only when one changed, and their events
// follow the write; a conflict is setup.RequeueOnConflict's: reconciled again
// soon, no error.
//
// The Machine controller learns of class changes by watching MachineClasses
// itself; MachinesOfClass is the mapping it can use.
package machineclass
