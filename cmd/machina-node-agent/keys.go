package main

// machina's target identity on the Node (docs/in-place-updates.md): what the
// node must become, written by the core, and what it last applied
// successfully, written by the agent together with update-result=successful.
const (
	annotationDesired = "inplace.machina.io/desired"
	annotationCurrent = "inplace.machina.io/current"
)
