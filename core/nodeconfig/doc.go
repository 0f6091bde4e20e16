// Package nodeconfig is the endpoint through which a node agent reads its
// configuration: the rendered MachineConfigs its own Node names
// (desiredConfig and currentConfig) and the pools they were rendered for,
// and nothing else.
//
// RBAC cannot say "the MachineConfig my Node names": Nodes and
// MachineConfigs are cluster-scoped, every agent shares one ServiceAccount,
// and rendered names change with every rendering. So the agents get no
// read of MachineConfigs at all, and the manager serves them instead
// (Server): it authenticates the caller's bearer token with a TokenReview,
// takes the node from the token (the extra
// authentication.kubernetes.io/node-name that the API server puts in a
// token bound to a pod on a Node), authorizes the read with a
// SubjectAccessReview of the virtual subresource node-config, and answers
// only for a name that Node's annotations carry.
//
// The server's certificate is self-signed; each manager replica publishes
// its own in a ConfigMap (a trust bundle, one key per replica) that agents
// may read, and Client trusts every certificate in it.
package nodeconfig
