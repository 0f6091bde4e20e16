// Package secret is the Secret controller. It keeps MCM's finalizer
// (machine.sapcloud.io/machine-controller) on every Secret that a
// MachineClass refers to, through secretRef or credentialsSecretRef, and
// removes it once no class does. A class being deleted still counts: its
// machines may need the credentials to delete their VMs.
//
// The controller watches Secrets as metadata only, so the values of the
// secrets never enter its cache.
//
// The finalizer is added with setup.AddFinalizer and removed through
// setup.Patcher with the Secret's resourceVersion (a live Secret may gain
// another controller's finalizer meanwhile); a conflict is
// setup.RequeueOnConflict's: reconciled again soon, no error.
package secret
