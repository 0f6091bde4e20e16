// Package manifests renders machina's kustomize directories (deploy/...) and
// applies the result to an API server with server-side apply. The demo uses
// it to install RBAC and the examples, and its tests check the deployment
// manifests against a real kube-apiserver.
package manifests
