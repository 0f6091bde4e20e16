// Package secret is the Secret controller. It keeps MCM's finalizer
// (machine.sapcloud.io/machine-controller) on every Secret that a
// MachineClass refers to, through secretRef or credentialsSecretRef, and
// removes it once no class does. A class being deleted still counts: its
// machines may need the credentials to delete their VMs.
//
// The controller watches Secrets as metadata only, so the values of the
// secrets never enter its cache.
package secret
