// Package bootstrap prepares what a new machine needs to join its cluster:
// it fills the placeholders of the user data (the machine's name and a
// bootstrap token) and manages the bootstrap-token Secrets in the target
// cluster's kube-system namespace.
//
// A bootstrap token lets the kubelet of a new VM authenticate once, to ask
// for its client certificate. It lives at most as long as the machine's
// creation timeout and is deleted as soon as the machine has joined.
package bootstrap
